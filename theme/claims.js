// Claim marks, for a reader with JavaScript: a mark (✓) opens its evidence
// on the page, under the sentence, and a button in the menu bar hides or
// shows every mark, remembered across pages. Without JavaScript a mark
// stays a link to its entry in Appendix F.
//
// The evidence comes from the chapter's own hidden store (built by the
// listings preprocessor): per test, its place, the kind of evidence, the
// result in the run that built the book, the command that reruns it and
// its code, folded. A panel is a copy of the entries of its mark's tests.
(function () {
  'use strict';
  var KEY = 'claim-marks';
  var root = document.documentElement;

  function hidden() {
    return root.classList.contains('claims-hidden');
  }

  function setHidden(on, button) {
    root.classList.toggle('claims-hidden', on);
    try {
      localStorage.setItem(KEY, on ? 'hidden' : 'shown');
    } catch (e) { /* storage refused: the choice lasts this page */ }
    if (button) {
      button.setAttribute('aria-pressed', on ? 'false' : 'true');
      button.title = on ? 'Show the claim marks' : 'Hide the claim marks';
    }
  }

  function close(panel) {
    var link = document.querySelector('[aria-controls="' + panel.id + '"]');
    if (link) link.setAttribute('aria-expanded', 'false');
    panel.remove();
  }

  function open(mark, link) {
    var id = 'panel-' + mark.id.replace(/^mark-/, '');
    var old = document.getElementById(id);
    if (old) {
      close(old);
      return;
    }
    var panel = document.createElement('div');
    panel.className = 'claim-panel';
    panel.id = id;
    panel.setAttribute('role', 'region');
    panel.setAttribute('aria-label', 'The tests that check this sentence');
    var title = document.createElement('p');
    title.className = 'claim-panel-title';
    title.textContent = 'Checked by:';
    panel.appendChild(title);
    (mark.getAttribute('data-tests') || '').split(' ').forEach(function (t) {
      var store = t && document.getElementById(t);
      if (!store) return;
      store.querySelectorAll('.claim-evidence').forEach(function (e) {
        panel.appendChild(e.cloneNode(true));
      });
    });
    var foot = document.createElement('p');
    foot.className = 'claim-panel-foot';
    var entry = document.createElement('a');
    entry.href = link.getAttribute('href');
    entry.textContent = 'Its entry in Appendix F';
    var shut = document.createElement('button');
    shut.type = 'button';
    shut.className = 'claim-panel-close';
    shut.textContent = 'Close';
    shut.addEventListener('click', function () {
      close(panel);
      link.focus();
    });
    foot.appendChild(entry);
    foot.appendChild(document.createTextNode(' · '));
    foot.appendChild(shut);
    panel.appendChild(foot);
    var block = mark.closest('li, p, blockquote, td, dd') || mark.parentElement;
    if (block.tagName === 'LI' || block.tagName === 'TD' || block.tagName === 'DD') {
      block.appendChild(panel);
    } else {
      block.after(panel);
    }
    link.setAttribute('aria-expanded', 'true');
    link.setAttribute('aria-controls', id);
  }

  document.addEventListener('click', function (event) {
    var link = event.target.closest && event.target.closest('sup.claim > a');
    if (!link) return;
    var mark = link.parentElement;
    if (!mark.hasAttribute('data-tests')) return;
    event.preventDefault();
    open(mark, link);
  });

  // Each mark says it opens something; Enter on a focused link is a click.
  document.querySelectorAll('sup.claim[data-tests] > a').forEach(function (a) {
    a.setAttribute('aria-expanded', 'false');
    a.setAttribute('role', 'button');
  });
  document.addEventListener('keydown', function (event) {
    // A link with role=button also opens on Space, as a button does.
    if (event.key !== ' ') return;
    var link = event.target.closest && event.target.closest('sup.claim > a');
    if (!link) return;
    event.preventDefault();
    link.click();
  });

  // The toggle, beside the print button.
  var bar = document.querySelector('.right-buttons');
  if (bar) {
    var button = document.createElement('button');
    button.type = 'button';
    button.id = 'claim-toggle';
    button.className = 'icon-button';
    button.textContent = '✓';
    button.setAttribute('aria-label', 'Claim marks');
    bar.insertBefore(button, bar.firstChild);
    setHidden(hidden(), button);
    button.addEventListener('click', function () {
      setHidden(!hidden(), button);
    });
  }
})();
