// The console works without this script; it only moves the keyboard focus
// to what a form's answer changed: the error, or the result.
document.addEventListener("DOMContentLoaded", () => {
  const target = document.getElementById("error") || document.getElementById("summary") || document.getElementById("diff");
  if (target) {
    target.setAttribute("tabindex", "-1");
    target.focus();
  }
});
