# The python runner's version probe (tools/languages.c): one JSON object on
# stdout, the versions the image's own interpreter reports. It asks the
# installed distributions' metadata, which imports none of the packages.
import json, sys
from importlib import metadata
packages = {}
for name in ('numpy', 'pandas', 'scipy', 'matplotlib', 'sympy', 'requests', 'pillow'):
    try:
        packages[name] = metadata.version(name)
    except Exception:
        pass
print(json.dumps({'version': '%d.%d.%d' % sys.version_info[:3], 'packages': packages}))
