// The node runner's version probe (tools/languages.c): one JSON object on
// stdout. Node has no package list of its own: the global module folders.
const fs = require('fs');
const path = require('path');
const packages = {};
for (const dir of ['/usr/local/lib/node_modules', '/usr/lib/node_modules', '/usr/share/nodejs']) {
  let names = [];
  try { names = fs.readdirSync(dir).sort(); } catch (e) {}
  for (const name of names) {
    if (Object.keys(packages).length >= 16) break;
    try {
      const m = JSON.parse(fs.readFileSync(path.join(dir, name, 'package.json'), 'utf8'));
      if (typeof m.version === 'string') packages[name] = m.version;
    } catch (e) {}
  }
}
console.log(JSON.stringify({ version: process.version, packages }));
