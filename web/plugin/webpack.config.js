// webpack.config.js builds the console dynamic plugin into dist/: the
// views of ../src with the console's API access (src/k8s.ts) and paths
// (src/route.ts) in place of ../src/k8s.ts and ../src/route.ts. The
// console's SDK plugin writes plugin-manifest.json and the remote entry.
const path = require('node:path');
const webpack = require('webpack');
const { ConsoleRemotePlugin } = require('@openshift-console/dynamic-plugin-sdk-webpack');

const views = path.resolve(__dirname, '..', 'src');
const own = path.resolve(__dirname, 'src');

module.exports = {
  mode: 'production',
  context: __dirname,
  entry: {},
  output: {
    path: path.resolve(__dirname, 'dist'),
    filename: '[name]-bundle-[contenthash].min.js',
    chunkFilename: '[name]-chunk-[chunkhash].min.js',
    // dist/PLACEHOLDER is committed (the Go embed needs a file there).
    clean: { keep: /PLACEHOLDER/ },
  },
  resolve: {
    extensions: ['.ts', '.tsx', '.js', '.jsx'],
    // The views live in ../src, whose own node_modules (knmstate ui's)
    // must not be picked: the plugin's packages come first.
    modules: [path.resolve(__dirname, 'node_modules'), 'node_modules'],
  },
  module: {
    rules: [
      {
        test: /\.tsx?$/,
        exclude: /node_modules/,
        use: [{ loader: 'ts-loader', options: { transpileOnly: true, configFile: path.resolve(__dirname, 'tsconfig.json') } }],
      },
      { test: /\.css$/, type: 'asset/source' },
    ],
  },
  plugins: [
    new webpack.NormalModuleReplacementPlugin(/^\.\/(k8s|route)$/, (res) => {
      if (res.context === views) res.request = path.join(own, res.request);
    }),
    new ConsoleRemotePlugin(),
  ],
  devtool: false,
  optimization: { chunkIds: 'named', minimize: true },
  performance: { hints: false },
  // Errors and warnings only; test/host/build.mjs prints the sizes.
  stats: 'errors-warnings',
};
