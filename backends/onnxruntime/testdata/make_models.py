#!/usr/bin/python3
"""Writes the tiny ONNX models the onnxruntime plugin test uses (opset 13, IR version 8).

Usage: make_models.py OUTPUT_DIR. Needs Debian's python3-onnx; deterministic output.
"""
import os
import sys

import onnx
from onnx import TensorProto, helper

OPSET = 13
IR_VERSION = 8


def save(graph, out_dir, name):
    model = helper.make_model(graph, producer_name="nereid-backend-test",
                              opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out_dir, name))


def add_sub(out_dir):
    """INPUT0, INPUT1 int32 [batch,16] -> OUTPUT0 = sum, OUTPUT1 = difference (Triton's simple)."""
    shape = ["batch", 16]
    graph = helper.make_graph(
        [helper.make_node("Add", ["INPUT0", "INPUT1"], ["OUTPUT0"]),
         helper.make_node("Sub", ["INPUT0", "INPUT1"], ["OUTPUT1"])],
        "add_sub",
        [helper.make_tensor_value_info("INPUT0", TensorProto.INT32, shape),
         helper.make_tensor_value_info("INPUT1", TensorProto.INT32, shape)],
        [helper.make_tensor_value_info("OUTPUT0", TensorProto.INT32, shape),
         helper.make_tensor_value_info("OUTPUT1", TensorProto.INT32, shape)])
    save(graph, out_dir, "add_sub.onnx")


def fixed_relu(out_dir):
    """X float [2,3] -> Y = relu(X): fixed shape, so not batchable."""
    graph = helper.make_graph(
        [helper.make_node("Relu", ["X"], ["Y"])], "fixed_relu",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 3])])
    save(graph, out_dir, "fixed_relu.onnx")


def passthrough(out_dir):
    """X float [batch,4] -> X itself (a graph output that is the graph input) and R = relu(X)."""
    shape = ["batch", 4]
    graph = helper.make_graph(
        [helper.make_node("Relu", ["X"], ["R"])], "passthrough",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, shape),
         helper.make_tensor_value_info("R", TensorProto.FLOAT, shape)])
    save(graph, out_dir, "passthrough.onnx")


def big_relu(out_dir):
    """X float [batch,4096] -> Y = relu(X): 16 KiB a row, above the plugin's staged-run size."""
    shape = ["batch", 4096]
    graph = helper.make_graph(
        [helper.make_node("Relu", ["X"], ["Y"])], "big_relu",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, shape)])
    save(graph, out_dir, "big_relu.onnx")


TYPES = {
    "BOOL": TensorProto.BOOL, "UINT8": TensorProto.UINT8, "UINT16": TensorProto.UINT16,
    "UINT32": TensorProto.UINT32, "UINT64": TensorProto.UINT64, "INT8": TensorProto.INT8,
    "INT16": TensorProto.INT16, "INT32": TensorProto.INT32, "INT64": TensorProto.INT64,
    "FP16": TensorProto.FLOAT16, "FP32": TensorProto.FLOAT, "FP64": TensorProto.DOUBLE,
    "BF16": TensorProto.BFLOAT16, "STRING": TensorProto.STRING,
}


def identity_types(out_dir):
    """IN_<T> [batch,-1] -> OUT_<T> = IN_<T> for every supported element type."""
    nodes, inputs, outputs = [], [], []
    for name, elem in TYPES.items():
        shape = ["batch", "n"]
        nodes.append(helper.make_node("Identity", ["IN_" + name], ["OUT_" + name]))
        inputs.append(helper.make_tensor_value_info("IN_" + name, elem, shape))
        outputs.append(helper.make_tensor_value_info("OUT_" + name, elem, shape))
    save(helper.make_graph(nodes, "identity_types", inputs, outputs), out_dir,
         "identity_types.onnx")


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    add_sub(out_dir)
    fixed_relu(out_dir)
    identity_types(out_dir)
    passthrough(out_dir)
    big_relu(out_dir)
    with open(os.path.join(out_dir, "not_onnx.onnx"), "w") as f:
        f.write("this is not an ONNX model\n")


if __name__ == "__main__":
    main()
