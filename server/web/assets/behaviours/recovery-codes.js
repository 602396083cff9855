/*
 * Recovery codes (the page that shows them once): a container marked `data-recovery-codes` gets
 * a working "Copy" button (`data-copy-codes`: the codes, one a line, to the clipboard; the status
 * next to it says "Copied") and "Print" (`data-print-codes`: the browser's print dialog; the
 * print stylesheet in account.css prints the codes alone). Both stay hidden without this script;
 * the page's "Download" link (a data: address made by the server) and selecting the codes work
 * without it.
 */
(() => {
  const attach = () => {
    for (const box of document.querySelectorAll('[data-recovery-codes]')) {
      const codes = () => Array.from(box.querySelectorAll('.codes code'), (code) => code.textContent.trim()).join('\n');
      const status = box.querySelector('[data-copied]');
      const say = (text) => {
        if (status) status.textContent = text;
      };
      const copy = box.querySelector('[data-copy-codes]');
      if (copy && navigator.clipboard) {
        copy.hidden = false;
        copy.addEventListener('click', () => {
          navigator.clipboard.writeText(`${codes()}\n`).then(
            () => say('Copied'),
            () => say('Copying did not work here: select the codes instead.'),
          );
        });
      }
      const print = box.querySelector('[data-print-codes]');
      if (print && typeof window.print === 'function') {
        print.hidden = false;
        print.addEventListener('click', () => window.print());
      }
    }
  };
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', attach);
  else attach();
})();
