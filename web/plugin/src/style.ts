// style.ts adds the views' own stylesheet (web/src/app.css, bundled as
// text) to the console's document once; PatternFly's styles are the
// console's.
import css from '../../src/app.css';

export function useStyle() {
  if (document.getElementById('knmstate-style') !== null) return;
  const el = document.createElement('style');
  el.id = 'knmstate-style';
  el.textContent = css;
  document.head.appendChild(el);
}
