/*
 * "Show password": a password input marked `data-show-password` gets a button after it that shows
 * what was typed and hides it again. It is a real button (`type="button"`, so it never submits
 * the form) with `aria-pressed` telling whether the password is shown and `aria-controls` naming
 * the input; its words stay the same. The form is always sent with the input hidden again (a
 * browser must not remember it as ordinary text). Without this script the input is an ordinary
 * password input and the page works the same.
 */
(() => {
  const attach = () => {
    for (const input of document.querySelectorAll('input[type=password][data-show-password]')) {
      if (!input.id || input.dataset.showPasswordReady === 'yes') continue;
      input.dataset.showPasswordReady = 'yes';
      const button = document.createElement('button');
      button.type = 'button';
      button.className = 'secondary show-password';
      button.textContent = 'Show password';
      button.setAttribute('aria-controls', input.id);
      button.setAttribute('aria-pressed', 'false');
      const show = (shown) => {
        input.type = shown ? 'text' : 'password';
        button.setAttribute('aria-pressed', shown ? 'true' : 'false');
      };
      button.addEventListener('click', () => show(button.getAttribute('aria-pressed') !== 'true'));
      input.form?.addEventListener('submit', () => show(false));
      input.insertAdjacentElement('afterend', button);
    }
  };
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', attach);
  else attach();
})();
