#!/usr/bin/python3
"""TorchScript models for Nereid's pytorch backend tests and benchmarks (Debian's python3-torch).

Imported by scripts/gen_test_models.py (repositories `fixtures/torch`, `fixtures/torch_broken`)
and run by the build for the plugin's own test (`--plugin-test DIR` writes loose .pt files).
Every module is scripted (torch.jit.script), so forward keeps its argument names and types, and
saved with torch.jit.save; output is deterministic (fixed seeds). Input and output positions
follow Triton's `<name>__<index>` convention unless a model says otherwise.

Modules:
  AddSub        (INPUT__0, INPUT__1) -> (sum, difference); any dtype. Twin of the ONNX `simple`.
  NamedArgs     forward(self, minuend, subtrahend) -> (minuend - subtrahend, minuend * subtrahend)
  AllTypes      ten inputs: bool, uint8, int8, int16, int32, int64, fp16, fp32, fp64 tensors and a
                List[str]; returns (not bool, x + 1 for each number type, strings + "!").
  Scale2        x * 2 (any shape: the variable-shape model).
  AddOne        x + 1 (used with reshape).
  DictInput     forward(self, inputs: Dict[str, Tensor]) -> inputs["x"] - inputs["y"]
  Strings       List[str] -> (upper-cased list, lengths as int64 tensor)
  ToFloat       x -> x.float() (returns FP32 whatever the config says: undeclared output type)
  MatMul4       x @ W with W [4,4]: a request whose last dimension is not 4 fails in forward
  TakeTwo       x[:, :2] (an output shape the configuration does not declare)
  ReturnsDict   returns Dict[str, Tensor] (a forward output type Triton cannot serve)
  Accumulator   (INPUT__0, START__1, STATE__2) -> (OUTPUT__0, OUTPUT_STATE__1): the implicit-state
                accumulator of seed 000, state = input on START, else state + input
  AccumulatorNoStart (INPUT__0, STATE__1) -> (OUTPUT__0, OUTPUT_STATE__1): input + state always
                (for initial_state models, like the ONNX accumulator without START)
  RaggedSum     (INPUT__0 flat [n] float, INDEX__1 int32 [requests] accumulated element counts)
                -> (each request's sum [requests,1], 2 * INPUT__0 flat): a ragged-batching model
  Mlp           Linear(+ReLU) 256->2048->2048->1024->16 with the ONNX mlp_fp32's exact weights
                (same seeded generator), so both answer the same to float tolerance.
"""

import argparse
import os
import sys
from typing import Dict, List, Tuple

import numpy as np
import torch


class AddSub(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        return a + b, a - b


class NamedArgs(torch.nn.Module):
    def forward(self, minuend: torch.Tensor,
                subtrahend: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        return minuend - subtrahend, minuend * subtrahend


class AllTypes(torch.nn.Module):
    def forward(self, b: torch.Tensor, u8: torch.Tensor, i8: torch.Tensor, i16: torch.Tensor,
                i32: torch.Tensor, i64: torch.Tensor, f16: torch.Tensor, f32: torch.Tensor,
                f64: torch.Tensor, s: List[str]) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor,
                                                          torch.Tensor, torch.Tensor, torch.Tensor,
                                                          torch.Tensor, torch.Tensor, torch.Tensor,
                                                          List[str]]:
        out: List[str] = []
        for x in s:
            out.append(x + "!")
        return (torch.logical_not(b), u8 + 1, i8 + 1, i16 + 1, i32 + 1, i64 + 1, f16 + 1,
                f32 + 1, f64 + 1, out)


class Scale2(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


class AddOne(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + 1


class DictInput(torch.nn.Module):
    def forward(self, inputs: Dict[str, torch.Tensor]) -> torch.Tensor:
        return inputs["x"] - inputs["y"]


class Strings(torch.nn.Module):
    def forward(self, s: List[str]) -> Tuple[List[str], torch.Tensor]:
        upper: List[str] = []
        lengths: List[int] = []
        for x in s:
            upper.append(x.upper())
            lengths.append(len(x))
        return upper, torch.tensor(lengths, dtype=torch.int64)


class ToFloat(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.float()


class MatMul4(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.eye(4) * 3, requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.matmul(x, self.w)


class TakeTwo(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[:, :2]


class ReturnsDict(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> Dict[str, torch.Tensor]:
        return {"y": x}


class Accumulator(torch.nn.Module):
    def forward(self, x: torch.Tensor, start: torch.Tensor,
                state: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        new_state = torch.where(start != 0, x, x + state)
        return new_state, new_state


class AccumulatorNoStart(torch.nn.Module):
    def forward(self, x: torch.Tensor,
                state: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        new_state = x + state
        return new_state, new_state


class Mlp(torch.nn.Module):
    def __init__(self, sizes=(256, 2048, 2048, 1024, 16), seed=1234):
        super().__init__()
        rng = np.random.default_rng(seed)  # the same draws, in order, as gen_test_models.mlp_onnx
        layers = []
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
            w = (rng.standard_normal((fan_in, fan_out)) * np.sqrt(2.0 / fan_in)).astype(np.float32)
            b = (rng.standard_normal(fan_out) * 0.01).astype(np.float32)
            layer = torch.nn.Linear(fan_in, fan_out)
            with torch.no_grad():
                layer.weight.copy_(torch.from_numpy(w.T.copy()))
                layer.bias.copy_(torch.from_numpy(b))
            layers.append(layer)
        self.layers = torch.nn.ModuleList(layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = len(self.layers)
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < n - 1:
                x = torch.relu(x)
        return x


class RaggedSum(torch.nn.Module):
    def forward(self, x: torch.Tensor,
                index: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        sums = torch.cat([torch.zeros(1, dtype=x.dtype), torch.cumsum(x, 0)])
        ends = index.long()
        starts = torch.cat([torch.zeros(1, dtype=torch.long), ends[:-1]])
        return (sums[ends] - sums[starts]).unsqueeze(1), x * 2


def scripted_bytes(module):
    """The TorchScript archive of `module` (eval mode, scripted), as bytes."""
    import io
    buf = io.BytesIO()
    torch.jit.save(torch.jit.script(module.eval()), buf)
    return buf.getvalue()


PLUGIN_TEST_MODELS = {
    "add_sub.pt": AddSub, "named_args.pt": NamedArgs, "all_types.pt": AllTypes,
    "dict_input.pt": DictInput, "strings.pt": Strings, "to_float.pt": ToFloat,
    "matmul4.pt": MatMul4, "take_two.pt": TakeTwo, "returns_dict.pt": ReturnsDict,
    "accumulator.pt": Accumulator,
}


def write_plugin_test_models(directory):
    os.makedirs(directory, exist_ok=True)
    torch.manual_seed(0)
    for name, cls in PLUGIN_TEST_MODELS.items():
        with open(os.path.join(directory, name), "wb") as f:
            f.write(scripted_bytes(cls()))
    with open(os.path.join(directory, "not_torchscript.pt"), "wb") as f:
        f.write(b"this is not a TorchScript archive\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plugin-test", metavar="DIR", required=True,
                        help="write the plugin test's .pt files into DIR")
    args = parser.parse_args(argv)
    write_plugin_test_models(args.plugin_test)
    return 0


if __name__ == "__main__":
    sys.exit(main())
