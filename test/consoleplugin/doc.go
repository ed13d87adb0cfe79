// Package consoleplugin tests knmstate's OpenShift console plugin in a
// real browser (Debian's chromium, headless, driven by chromedp): a small
// page stands in for the console, loads the plugin as the console does
// (its manifest and entry script through a proxy to `knmstate
// console-plugin`'s TLS server, as the console's bridge reaches the
// plugin's Service), and renders each exposed module against a real API
// server. No console runs here: the page provides what the console
// shares with plugins (React, the SDK's watch hook and fetch, the
// topology library).
package consoleplugin
