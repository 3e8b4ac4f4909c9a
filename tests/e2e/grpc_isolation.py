"""Every gRPC channel the end-to-end suites open gets its own subchannel pool.

gRPC Python shares subchannels (connections) between channels to the same target, process-wide.
A test that talks to a server after it stopped leaves that target's subchannel in connect
back-off; when a later server binds the same port (bind to port 0 reuses freed ports), the next
test's first call fails at once with the old "Connection refused" (seen in CI: a SIGTERM test's
gRPC port taken 7 s later by the statistics test). With a local pool a channel's state is its
own. tritonclient opens its channels through these same functions, so its clients are covered.
"""

import inspect

import grpc

OPTION = ("grpc.use_local_subchannel_pool", 1)


def _with_local_pool(options):
    options = list(options or [])
    if not any(name == OPTION[0] for name, _ in options):
        options.append(OPTION)
    return options


def _wrap(open_channel):
    if getattr(open_channel, "_nereid_local_pool", False):
        return open_channel
    signature = inspect.signature(open_channel)

    def opened(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.arguments["options"] = _with_local_pool(bound.arguments.get("options"))
        return open_channel(*bound.args, **bound.kwargs)

    opened._nereid_local_pool = True
    return opened


def install():
    grpc.insecure_channel = _wrap(grpc.insecure_channel)
    grpc.secure_channel = _wrap(grpc.secure_channel)
    try:
        import grpc.aio as aio
    except ImportError:  # grpcio without asyncio support
        return
    aio.insecure_channel = _wrap(aio.insecure_channel)
    aio.secure_channel = _wrap(aio.secure_channel)
