// Tooltips for the points of the history plots: text comes from data-tip, set as text (never HTML).
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  var tip = document.getElementById("tip");
  if (!tip) { return; }
  document.querySelectorAll("svg.plot circle.point").forEach(function (point) {
    var title = point.querySelector("title");
    if (title) { title.remove(); }
    point.addEventListener("mouseenter", function (event) {
      tip.textContent = point.getAttribute("data-tip") || "";
      tip.hidden = false;
      tip.style.left = (event.clientX + 12) + "px";
      tip.style.top = (event.clientY + 12) + "px";
    });
    point.addEventListener("mouseleave", function () { tip.hidden = true; });
  });
});
