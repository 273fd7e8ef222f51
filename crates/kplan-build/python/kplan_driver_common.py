"""What kplan's Python drivers (triton_build.py, triton_verify.py) share. Written beside the
driver in its temporary directory by the driver transport, so `import kplan_driver_common`
finds it."""
import os
import traceback


def error_line(exc, path):
    """1-based line in the kernel file where loading it failed, when known."""
    if isinstance(exc, SyntaxError) and exc.filename and os.path.abspath(exc.filename) == os.path.abspath(path):
        return exc.lineno
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if os.path.abspath(frame.filename) == os.path.abspath(path):
            line = frame.lineno
    return line
