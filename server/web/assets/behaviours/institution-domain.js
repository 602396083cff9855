/*
 * The profile page's positions (`data-institution-row`): choosing an institution from the list
 * fills in its domain when the domain is still empty. The list is the page's own
 * `<datalist id="institution-names">`, whose options carry the domain as their text. Without
 * this, the person types the domain (its own list offers the listed ones).
 */
(() => {
  const fill = (event) => {
    const input = event.target;
    if (!(input instanceof HTMLInputElement) || !input.id.endsWith('-institution')) return;
    const row = input.closest('[data-institution-row]');
    const domain = row?.querySelector('input[id$="-domain"]');
    const list = document.getElementById('institution-names');
    if (!domain || !list || domain.value !== '') return;
    for (const option of list.querySelectorAll('option')) {
      if (option.value === input.value && option.textContent) {
        domain.value = option.textContent;
        return;
      }
    }
  };
  document.addEventListener('change', fill);
})();
