// The console works without this script. It moves the keyboard focus to
// what a form's answer changed (the error, or the result), and follows a
// running job: while the page holds an element marked data-live, it
// fetches the page again every second and replaces that element.
document.addEventListener("DOMContentLoaded", () => {
  const target = document.getElementById("error") || document.getElementById("summary") || document.getElementById("diff") ||
    document.getElementById("given") || (location.search && document.getElementById("results"));
  if (target) {
    target.setAttribute("tabindex", "-1");
    target.focus();
  }
  const follow = () => {
    const live = document.querySelector("#live[data-live]");
    if (!live) return;
    setTimeout(async () => {
      try {
        const res = await fetch(location.href, { credentials: "same-origin", cache: "no-store" });
        if (!res.ok) return;
        const next = new DOMParser().parseFromString(await res.text(), "text/html").getElementById("live");
        if (!next) return;
        live.replaceWith(document.importNode(next, true));
      } catch (e) {
        return;
      }
      follow();
    }, 1000);
  };
  follow();
});
