"""The one page `translator serve` shows at GET /: a text box, the Italian, the attention map.

Pasted text is translated sentence by sentence and comes back with its line breaks.

With the PyTorch engine it draws one cross-attention map at a time, large enough to read every
token (the server draws it: /attention), with a choice of decoder layer and head or the heads'
mean. Ctrl+Enter translates; the beam and the time the request took show under the answer, and an
error from the server shows as its text.
"""

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>translator: English to Italian</title>
<style>
  body { font-family: system-ui, sans-serif; max-width: 52rem; margin: 1.5rem auto;
         padding: 0 1rem; color: #222; }
  h1 { font-size: 1.4rem; margin: 0 0 .8rem; }
  textarea { width: 100%; font-size: 1.1rem; padding: .5rem; box-sizing: border-box; }
  .row { display: flex; gap: .8rem; align-items: center; flex-wrap: wrap; margin-top: .5rem; }
  button { font-size: 1rem; padding: .4rem 1.2rem; }
  .hint, #meta, footer { font-size: .85rem; color: #666; }
  #result { font-size: 1.3rem; min-height: 1.6rem; padding: .6rem; margin: .4rem 0 .2rem;
            background: #f3f6f9; border-left: 4px solid #2a7ae2; white-space: pre-wrap; }
  #error { color: #b00020; white-space: pre-wrap; }
  #map { margin-top: 1rem; }
  #attention { display: block; max-width: 100%; margin-top: .5rem; }
  footer { margin-top: 2rem; }
</style>
</head>
<body>
<h1>English &rarr; Italian</h1>
<form id="form">
  <label for="text">English</label>
  <textarea id="text" rows="5"
            placeholder="Type or paste English: a sentence, a paragraph, several"></textarea>
  <div class="row">
    <label>beam <select id="beam"><option>1</option><option selected>4</option>
      <option>8</option></select></label>
    <button id="go" type="submit">Translate</button><span class="hint">Ctrl+Enter</span>
  </div>
</form>
<p id="result" aria-live="polite"></p>
<div id="meta"></div>
<p id="error" role="alert"></p>
<section id="map" hidden>
  <div class="row">cross-attention:
    <label>layer <select id="layer"></select></label>
    <label>head <select id="head"><option value="mean">mean</option></select></label>
  </div>
  <img id="attention" alt="attention map: output tokens by source tokens">
</section>
<footer id="about">engine: __ENGINE__</footer>
<script>
const engine = "__ENGINE__";
const $ = (id) => document.getElementById(id);
const headers = {"Content-Type": "application/json"};
let shown = null;  // the sentence and beam of the answer on screen

async function failure(reply) {  // the server's own words, whatever it sent
  const text = await reply.text();
  try { return JSON.parse(text).error || text; } catch (e) { return text || reply.statusText; }
}

async function translate() {
  const text = $("text").value, beam = parseInt($("beam").value, 10);
  $("error").textContent = ""; $("meta").textContent = ""; $("result").textContent = "\u2026";
  delete $("result").dataset.done;
  const start = performance.now();
  try {
    const reply = await fetch("translate", {method: "POST", headers,
                                            body: JSON.stringify({text: [text], beam})});
    const ms = Math.round(performance.now() - start);
    if (!reply.ok) {
      $("result").textContent = "";
      $("error").textContent = `${reply.status}: ${await failure(reply)}`;
      return;
    }
    $("result").textContent = (await reply.json()).translations[0];
    $("result").dataset.done = "1";
    $("meta").textContent = `beam ${beam} \u00b7 ${ms} ms`;
    shown = {text, beam};
    if (engine === "pytorch" && text.trim()) drawMap();
  } catch (err) {
    $("result").textContent = ""; $("error").textContent = `no answer from the server: ${err}`;
  }
}

async function drawMap() {
  if (!shown) return;
  const head = $("head").value;
  const body = {...shown, layer: parseInt($("layer").value, 10),
                head: head === "mean" ? "mean" : parseInt(head, 10)};
  const reply = await fetch("attention", {method: "POST", headers, body: JSON.stringify(body)});
  if (!reply.ok) {
    $("error").textContent = `map ${reply.status}: ${await failure(reply)}`;
    return;
  }
  const img = $("attention");
  if (img.src) URL.revokeObjectURL(img.src);
  img.src = URL.createObjectURL(await reply.blob());
  $("map").hidden = false;
}

$("form").addEventListener("submit", (event) => { event.preventDefault(); translate(); });
$("text").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
    event.preventDefault(); translate();
  }
});
$("layer").addEventListener("change", drawMap);
$("head").addEventListener("change", drawMap);
fetch("health").then(r => r.json()).then(h => {
  $("about").textContent = `model ${h.model}, step ${h.step}, engine ${h.engine}`;
  for (let n = 1; n <= h.layers; n++) $("layer").add(new Option(n, n, false, n === h.layers));
  for (let n = 1; n <= h.heads; n++) $("head").add(new Option(n, n));
  // The model's own beam (cpu.yaml decodes with 16) joins the menu, chosen.
  if (![...$("beam").options].some(o => o.value == h.beam)) $("beam").add(new Option(h.beam));
  $("beam").value = h.beam;
});
</script>
</body>
</html>
"""
