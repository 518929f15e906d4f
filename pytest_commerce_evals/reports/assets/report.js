(function () {
  var body = document.body;
  var search = document.getElementById('case-filter');
  var failing = document.getElementById('failing-only');
  var cases = Array.prototype.slice.call(document.querySelectorAll('details.case'));
  function apply() {
    var q = search ? search.value.trim().toLowerCase() : '';
    var shown = 0;
    cases.forEach(function (el) {
      var hit = !q || (el.getAttribute('data-search') || '').indexOf(q) !== -1;
      el.classList.toggle('hidden', !hit);
      if (hit && !(failing && failing.checked && el.classList.contains('passing'))) shown++;
    });
    if (failing) body.classList.toggle('hide-passing', failing.checked);
    var count = document.getElementById('shown-count');
    if (count) count.textContent = String(shown);
  }
  function expand(open) {
    document.querySelectorAll('details.case, details.trial').forEach(function (el) {
      if (!el.classList.contains('hidden')) el.open = open;
    });
  }
  if (search) search.addEventListener('input', apply);
  if (failing) failing.addEventListener('change', apply);
  var more = document.getElementById('expand-all');
  var less = document.getElementById('collapse-all');
  if (more) more.addEventListener('click', function () { expand(true); });
  if (less) less.addEventListener('click', function () { expand(false); });
  if (location.hash) {
    var target = document.getElementById(decodeURIComponent(location.hash.slice(1)));
    if (target && target.tagName === 'DETAILS') target.open = true;
  }
  apply();
  document.documentElement.setAttribute('data-report-ready', '1');
})();
