"""How a child that imports the user's framework starts: the user's interpreter and `sys.path` order.

The probes describe the frameworks this interpreter finds on its `sys.path` (PYTHONPATH first,
then the site directories). A measuring or verifying child must import those same files, so it
runs under the same interpreter with the same `sys.path`, in the same order: hwcheck's own
package folder is put first only while the child's hwcheck module loads, then the path is the
parent's exactly, so a framework on the user's PYTHONPATH is never shadowed by one installed
beside hwcheck. The environment is the user's (PYTHONPATH unchanged), for whatever the
framework itself starts.
"""

from __future__ import annotations

import json
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

# Run with `python -c`: argv[1] hwcheck's package folder, argv[2] the module to run (its main()
# is the child), argv[3] the parent's sys.path as JSON. A fixed text: no outside value is spliced in.
BOOTSTRAP = (
    "import importlib, json, sys\n"
    "root, name, path = sys.argv[1:4]\n"
    "del sys.argv[1:4]\n"
    "sys.path.insert(0, root)\n"
    "module = importlib.import_module(name)\n"
    "sys.path[:] = json.loads(path)\n"
    "sys.exit(module.main())\n"
)


def package_root() -> str:
    """The folder holding the hwcheck package that runs now."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def interpreter() -> str:
    """The interpreter the probes describe: this one."""
    return sys.executable or "python3"


def child_argv(module: str, search_path: Sequence[str] | None = None) -> list[str]:
    """The command running `module`'s main() under this interpreter with `search_path` (default sys.path)."""
    path = list(sys.path if search_path is None else search_path)
    return [interpreter(), "-c", BOOTSTRAP, package_root(), module, json.dumps(path)]
