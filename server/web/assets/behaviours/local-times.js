/*
 * Times in the reader's own time zone. The server writes every time as
 * `<time datetime="2026-11-25T23:40:00.000Z" data-local>2026-11-25 23:40 UTC</time>`, which reads
 * well as it is; here the text becomes the browser's local time ("25 Nov 2026, 18:40 EST"),
 * and the UTC time stays in the element's title.
 */
(() => {
  // `dateStyle`/`timeStyle` cannot be combined with `timeZoneName` (a TypeError in Chromium): the parts, one by one.
  const format = new Intl.DateTimeFormat(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit', timeZoneName: 'short' });
  const localise = () => {
    for (const element of document.querySelectorAll('time[data-local]')) {
      const at = new Date(element.getAttribute('datetime') ?? '');
      if (Number.isNaN(at.getTime())) continue;
      element.title = element.textContent ?? '';
      element.textContent = format.format(at);
      element.removeAttribute('data-local');
    }
  };
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', localise);
  else localise();
})();
