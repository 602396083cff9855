(function () {
  'use strict';
  var webauthn = window.SimpleWebAuthnBrowser;
  var supported = Boolean(webauthn && window.PublicKeyCredential);

  function postJson(url, body) {
    return fetch(url, {
      method: 'POST',
      credentials: 'same-origin',
      headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    }).then(function (res) {
      return res.json().catch(function () { return {}; }).then(function (data) {
        if (!res.ok) {
          var failure = new Error(data.message || 'The server answered ' + res.status);
          failure.status = res.status;
          failure.details = data.details;
          throw failure;
        }
        return data;
      });
    });
  }
  function explain(error) {
    if (error && error.name === 'NotAllowedError') return 'The passkey request was cancelled or timed out. Try again.';
    return (error && error.message) || 'The passkey could not be used.';
  }
  function say(element, text) {
    element.textContent = text;
    element.hidden = !text;
  }

  // The provider's login page: a passwordless sign-in, sent as a form so the page flow goes on as after a password.
  var form = document.getElementById('passkey-form');
  if (form && supported) {
    var formError = document.getElementById('passkey-error');
    form.hidden = false;
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      say(formError, '');
      var challengeId;
      postJson('/login/passkey/options')
        .then(function (begun) {
          challengeId = begun.challengeId;
          return webauthn.startAuthentication({ optionsJSON: begun.options });
        })
        .then(function (answer) {
          form.elements.namedItem('challengeId').value = challengeId;
          form.elements.namedItem('response').value = JSON.stringify(answer);
          form.submit();
        })
        .catch(function (error) { say(formError, explain(error)); });
    });
  }

  // The provider's second step after the password: the pending sign-in's passkey, posted as its code.
  var stepForm = document.getElementById('passkey-step-form');
  if (stepForm && supported) {
    var stepFormError = document.getElementById('passkey-step-form-error');
    stepForm.hidden = false;
    stepForm.addEventListener('submit', function (event) {
      event.preventDefault();
      say(stepFormError, '');
      var token = stepForm.elements.namedItem('mfaPendingToken').value;
      postJson('/mfa/challenge', { mfaPendingToken: token, method: 'passkey' })
        .then(function (options) { return webauthn.startAuthentication({ optionsJSON: options }); })
        .then(function (answer) {
          stepForm.elements.namedItem('code').value = JSON.stringify(answer);
          stepForm.submit();
        })
        .catch(function (error) { say(stepFormError, explain(error)); });
    });
  }

  // The account pages' "Add a passkey": creation options, the authenticator, then the answer
  // posted with the name as a form (the page shows recovery codes when it is the first factor).
  // When the service wants a recent proof first, the page that asks for it is opened instead.
  var addForm = document.getElementById('passkey-add-form');
  if (addForm && supported) {
    var addError = document.getElementById('passkey-add-error');
    addForm.hidden = false;
    addForm.addEventListener('submit', function (event) {
      event.preventDefault();
      say(addError, '');
      postJson('/mfa/setup/passkey/init')
        .then(function (options) { return webauthn.startRegistration({ optionsJSON: options }); })
        .then(function (answer) {
          addForm.elements.namedItem('response').value = JSON.stringify(answer);
          addForm.submit();
        })
        .catch(function (error) {
          if (error && error.status === 403 && error.details && error.details.reauthenticate) {
            window.location.assign(addForm.getAttribute('data-confirm'));
            return;
          }
          say(addError, explain(error));
        });
    });
  }

  // The passkey step of a pending sign-in, for a client listening on this machine.
  var step = document.getElementById('passkey-step');
  if (step) {
    var stepError = document.getElementById('passkey-step-error');
    var status = document.getElementById('passkey-step-status');
    var button = document.getElementById('passkey-step-start');
    var pendingToken = step.getAttribute('data-pending-token');
    var callback = step.getAttribute('data-callback');
    if (!supported) say(stepError, 'This browser cannot use passkeys.');
    button.addEventListener('click', function () {
      say(stepError, '');
      button.disabled = true;
      postJson('/mfa/challenge', { mfaPendingToken: pendingToken, method: 'passkey' })
        .then(function (options) { return webauthn.startAuthentication({ optionsJSON: options }); })
        .then(function (answer) { return postJson('/mfa/verify', { mfaPendingToken: pendingToken, method: 'passkey', code: answer }); })
        .then(function (session) {
          say(status, 'Signed in. Handing the session to your terminal…');
          var handoff = document.createElement('form');
          handoff.method = 'post';
          handoff.action = callback;
          [['token', session.token], ['user', JSON.stringify(session.user)]].forEach(function (pair) {
            var input = document.createElement('input');
            input.type = 'hidden';
            input.name = pair[0];
            input.value = pair[1];
            handoff.appendChild(input);
          });
          document.body.appendChild(handoff);
          handoff.submit();
        })
        .catch(function (error) {
          button.disabled = false;
          say(stepError, explain(error));
        });
    });
  }
})();

