"""Writes model repositories with ensembles for the ensemble suites: identity composing models
(backend "identity", output i = input i), Triton's add/sub `simple` copied from the examples, and
ensemble configurations built from (model, input_map, output_map) steps."""

import os
import shutil

from helpers import repo


def write_model(root, name, config, files=()):
    d = os.path.join(str(root), name)
    os.makedirs(os.path.join(d, "1"), exist_ok=True)
    with open(os.path.join(d, "config.pbtxt"), "w") as f:
        f.write(config)
    return d


def tensor(name, dtype, dims):
    return f'{{ name: "{name}" data_type: {dtype} dims: [ {", ".join(str(d) for d in dims)} ] }}'


def identity(root, name, dtype="TYPE_INT32", dims=(16,), max_batch=8, extra=""):
    write_model(root, name, f'''name: "{name}"
backend: "identity"
max_batch_size: {max_batch}
input [ {tensor("INPUT0", dtype, dims)} ]
output [ {tensor("OUTPUT0", dtype, dims)} ]
instance_group [ {{ count: 1 kind: KIND_CPU }} ]
{extra}
''')


def copy_simple(root, name="simple"):
    shutil.copytree(os.path.join(repo("examples"), "simple"), os.path.join(str(root), name))


def step(model, inputs, outputs, version=-1):
    maps = "".join(f'input_map {{ key: "{k}" value: "{v}" }} ' for k, v in inputs.items())
    maps += "".join(f'output_map {{ key: "{k}" value: "{v}" }} ' for k, v in outputs.items())
    return f'{{ model_name: "{model}" model_version: {version} {maps}}}'


def ensemble(root, name, inputs, outputs, steps, max_batch=8, extra=""):
    """inputs/outputs: lists of (name, dtype, dims)."""
    write_model(root, name, f'''name: "{name}"
platform: "ensemble"
max_batch_size: {max_batch}
input [ {", ".join(tensor(*t) for t in inputs)} ]
output [ {", ".join(tensor(*t) for t in outputs)} ]
ensemble_scheduling {{ step [ {", ".join(steps)} ] }}
{extra}
''')


I16 = ("TYPE_INT32", (16,))


def io(name, spec=I16):
    return (name, spec[0], spec[1])


def chain(root, name, model, length, spec=I16, model_io=("INPUT0", "OUTPUT0")):
    """An ensemble of `length` steps of `model` (model_io: its input and output), IN -> ... -> OUT."""
    steps = []
    for i in range(length):
        src = "IN" if i == 0 else f"t{i}"
        dst = "OUT" if i == length - 1 else f"t{i + 1}"
        steps.append(step(model, {model_io[0]: src}, {model_io[1]: dst}))
    ensemble(root, name, [io("IN", spec)], [io("OUT", spec)], steps)


def add_sub_pipeline(root, name="pipeline"):
    """IN0 -> ident_a -> t0, IN1 -> ident_b -> t1 (in parallel), (t0, t1) -> simple -> SUM, DIFF."""
    ensemble(root, name, [io("IN0"), io("IN1")], [io("SUM"), io("DIFF")], [
        step("ident_a", {"INPUT0": "IN0"}, {"OUTPUT0": "t0"}),
        step("ident_b", {"INPUT0": "IN1"}, {"OUTPUT0": "t1"}),
        step("simple", {"INPUT0": "t0", "INPUT1": "t1"}, {"OUTPUT0": "SUM", "OUTPUT1": "DIFF"}),
    ])
