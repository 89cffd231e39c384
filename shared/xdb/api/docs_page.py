"""``GET /docs``: a small interactive page over ``/openapi.json`` (no external assets)."""

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>XDB engine API</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;max-width:960px;margin:2em auto;padding:0 1em}
details{border:1px solid #ccc;border-radius:6px;margin:.5em 0;padding:.5em}
summary{cursor:pointer;font-family:monospace}
textarea{width:100%;height:9em;font-family:monospace}
pre{background:#f6f6f6;padding:.5em;overflow:auto;max-height:20em}
</style></head><body>
<h1>XDB engine API</h1>
<p>The iWF server API as XDB serves it. Each operation below takes a JSON body;
edit it and send it to this engine. The whole document is at
<a href="openapi.json">openapi.json</a>.</p>
<div id="ops">loading...</div>
<script>
const resolve = (doc, schema) => schema && schema.$ref
  ? doc.components.schemas[schema.$ref.split("/").pop()] : schema;
function example(doc, schema) {
  schema = resolve(doc, schema) || {};
  const body = {};
  for (const name of schema.required || []) {
    const field = resolve(doc, (schema.properties || {})[name]) || {};
    body[name] = field.type === "integer" ? 0 : field.type === "object" ? {} : "";
  }
  return JSON.stringify(body, null, 2);
}
fetch("openapi.json").then(r => r.json()).then(doc => {
  const ops = document.getElementById("ops");
  ops.textContent = "";
  for (const [path, item] of Object.entries(doc.paths)) {
    const [method, op] = Object.entries(item)[0];
    const box = document.createElement("details");
    const schema = op.requestBody && op.requestBody.content["application/json"].schema;
    box.innerHTML = `<summary>${method.toUpperCase()} ${path}</summary>
      ${schema ? "<textarea></textarea>" : ""}<button>Send</button><pre></pre>`;
    if (schema) box.querySelector("textarea").value = example(doc, schema);
    box.querySelector("button").onclick = async () => {
      const init = {method: method.toUpperCase(), headers: {"content-type": "application/json"}};
      if (schema) init.body = box.querySelector("textarea").value;
      const answer = await fetch(path, init);
      box.querySelector("pre").textContent = answer.status + "\\n" + await answer.text();
    };
    ops.appendChild(box);
  }
});
</script></body></html>
"""
