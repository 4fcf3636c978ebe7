"""Scheduling: the state under rewriting, plans as data, one primitive per module.

The package is callable too, as `tirc.schedule(module, plan)` of the Python API
(tirc.api.schedule): once imported it is the attribute `tirc.schedule`, which would hide the
API's function of that name.
"""

import sys
import types
from typing import Any


class _CallablePackage(types.ModuleType):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # deferred: the Python API sits above this layer (the one exception of pyproject's
        # layering contract for this package); it is needed only when the package is called
        from tirc.api import schedule

        return schedule(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
