// The plugin build loads stylesheets as text (webpack asset/source).
declare module '*.css' {
  const text: string;
  export default text;
}
