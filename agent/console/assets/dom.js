// Strata console, shared by every page (loaded before the page's own
// script): building elements with text, never HTML, and byte sizes as
// people read them.
"use strict";

// el makes a tag with attributes and children; strings become text nodes,
// so names from the cluster can never become markup.
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

// human writes a byte count (which may be negative, a change) in binary
// units.
function human(bytes) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let v = bytes, i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return (i === 0 ? v.toFixed(0) : v.toFixed(1)) + " " + units[i];
}
