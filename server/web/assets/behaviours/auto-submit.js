/*
 * A form that sends the person on by itself (`data-auto-submit`): the sign-in provider's answer
 * posted to an application (`response_mode=form_post`). Without this, the person presses its
 * button.
 */
(() => {
  for (const form of document.querySelectorAll('form[data-auto-submit]')) {
    if (form instanceof HTMLFormElement) form.submit();
  }
})();
