"""The one page `translator serve` shows at GET /: a text box, the Italian, the attention map."""

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>translator: English to Italian</title>
<style>
  body { font-family: system-ui, sans-serif; max-width: 52rem; margin: 2rem auto; padding: 0 1rem;
         color: #222; }
  h1 { font-size: 1.4rem; }
  textarea { width: 100%; font-size: 1.1rem; padding: .5rem; box-sizing: border-box; }
  button { font-size: 1rem; padding: .4rem 1.2rem; margin-top: .5rem; }
  #result { font-size: 1.3rem; min-height: 1.6rem; padding: .6rem; background: #f3f6f9;
            border-left: 4px solid #2a7ae2; white-space: pre-wrap; }
  #error { color: #b00020; }
  #attention { max-width: 100%; margin-top: 1rem; }
  footer { margin-top: 2rem; font-size: .85rem; color: #666; }
</style>
</head>
<body>
<h1>English &rarr; Italian</h1>
<form id="form">
  <label for="text">English</label>
  <textarea id="text" rows="3" placeholder="Type an English sentence"></textarea>
  <label for="beam">beam</label>
  <select id="beam"><option>1</option><option selected>4</option><option>8</option></select>
  <button id="go" type="submit">Translate</button>
</form>
<h2>Italiano</h2>
<p id="result" aria-live="polite"></p>
<p id="error"></p>
<img id="attention" alt="attention map" hidden>
<footer id="about">engine: __ENGINE__</footer>
<script>
const engine = "__ENGINE__";
const form = document.getElementById("form");
form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const text = document.getElementById("text").value;
  const beam = parseInt(document.getElementById("beam").value, 10);
  const result = document.getElementById("result"), error = document.getElementById("error");
  const img = document.getElementById("attention");
  error.textContent = "";
  result.textContent = "\u2026";
  const body = JSON.stringify({text: [text], beam: beam});
  const headers = {"Content-Type": "application/json"};
  const reply = await fetch("translate", {method: "POST", headers, body});
  const data = await reply.json();
  if (!reply.ok) { result.textContent = ""; error.textContent = data.error; return; }
  result.textContent = data.translations[0];
  result.dataset.done = "1";
  if (engine === "pytorch" && text.trim()) {
    const att = await fetch("attention", {method: "POST", headers,
                                          body: JSON.stringify({text: text, beam: beam})});
    if (att.ok) { img.src = URL.createObjectURL(await att.blob()); img.hidden = false; }
  }
});
fetch("health").then(r => r.json()).then(h => {
  document.getElementById("about").textContent =
    `model ${h.model}, step ${h.step}, engine ${h.engine}`;
});
</script>
</body>
</html>
"""
