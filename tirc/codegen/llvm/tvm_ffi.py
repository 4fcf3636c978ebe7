"""`--abi tvm-ffi` for the CPU: beside each exported C function `f`, a packed function
`__tvm_ffi_f` in tvm-ffi's safe-call convention,

    int __tvm_ffi_f(void *self, const TVMFFIAny *args, int32_t num_args, TVMFFIAny *result)

that checks its arguments as tirc.codegen.ffi_signature describes (count, types, and each
tensor's device, rank, dtype, shape, strides and alignment), binds the shape variables from
the tensors, calls `f`, and raises any failure through `TVMFFIErrorSetRaisedFromCStr`, naming
the parameter and what was expected. The tvm-ffi functions it calls come from libtvm_ffi,
which `tvm_ffi.load_module` has loaded; an object file's users link against it.
"""

from __future__ import annotations

from llvmlite import ir

from tirc.codegen import ffi_signature as ffi
from tirc.codegen.abi import AbiParam, ParamKind
from tirc.codegen.ffi_signature import Dimension, FfiSignature, TensorParam, ffi_signature
from tirc.codegen.llvm import types as T
from tirc.codegen.llvm.casts import emit_cast
from tirc.codegen.llvm.emitter import Emitter
from tirc.diagnostics import DiagnosticError
from tirc.ir import dtype as dt
from tirc.ir.abi import returned_type
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.function import IRModule

ANY_BYTES = 16  # a TVMFFIAny: type_index, padding, an 8-byte value
MESSAGE_BYTES = 1024
I16 = ir.IntType(16)
DOUBLE = ir.DoubleType()
# DLTensor field offsets (dlpack.h, 64-bit)
DATA, DEVICE_TYPE, NDIM, DTYPE_CODE, DTYPE_BITS, DTYPE_LANES = 0, 8, 16, 20, 21, 22
SHAPE, STRIDES, BYTE_OFFSET = 24, 32, 40


def add_tvm_ffi_wrappers(
    module: ir.Module, lowered: IRModule, exported: list[tuple[str, str]]
) -> list[str]:
    """Adds `__tvm_ffi_<symbol>` for each (symbol, function name) exported; their names."""
    names = []
    for symbol, name in exported:
        if returned_type(lowered[name]) is not None:
            raise DiagnosticError.at(
                lowered[name].span,
                f"--abi tvm-ffi does not pass the value {name} returns yet; its C function "
                "returns it (--abi c)",
            )
        signature = ffi_signature(symbol, lowered[name])
        target = module.globals[symbol]
        assert isinstance(target, ir.Function)
        _Wrapper(module, signature, target).emit()
        names.append(signature.packed_name)
    return names


class _Wrapper:
    def __init__(self, module: ir.Module, signature: FfiSignature, target: ir.Function) -> None:
        self.module = module
        self.sig = signature
        self.target = target
        function_type = ir.FunctionType(T.I32, [T.POINTER, T.POINTER, T.I32, T.POINTER])
        self.function = ir.Function(module, function_type, signature.packed_name)
        for arg, name in zip(
            self.function.args, ("self", "args", "num_args", "result"), strict=True
        ):
            arg.name = name
        self.entry = self.function.append_basic_block("entry")
        self.builder = ir.IRBuilder(self.function.append_basic_block("start"))
        self.message = ir.IRBuilder(self.entry).alloca(ir.ArrayType(T.I8, MESSAGE_BYTES))
        self.message.type = T.POINTER  # llvmlite types an alloca with a typed pointer
        self.values: dict[Var, ir.Value] = {}  # shape variables, as i64
        self.strides_of: dict[int, list[ir.Value]] = {}  # each tensor's strides, as i64
        self.full: ir.Value = ir.Constant(T.I1, 1)

    def emit(self) -> None:
        b = self.builder
        args, count = self.function.args[1], self.function.args[2]
        sig = self.sig
        self.full = b.icmp_signed("==", count, ir.Constant(T.I32, sig.full_count))
        ok = self.full
        if sig.short_form and sig.short_count != sig.full_count:
            ok = b.or_(ok, b.icmp_signed("==", count, ir.Constant(T.I32, sig.short_count)))
        self.check(ok, ffi.TYPE_ERROR, sig.count_message(), count)
        call_args: list[ir.Value | None] = []
        tensors: dict[int, tuple[ir.Value, list[ir.Value]]] = {}
        for index, param in enumerate(sig.params):
            if param.kind is ParamKind.SHAPE:
                call_args.append(None)  # once the tensors have told the shapes
                continue
            position = self.position(index)
            any_value = b.gep(
                args, [b.mul(position, ir.Constant(T.I32, ANY_BYTES))], source_etype=T.I8
            )
            if param.kind is ParamKind.BUFFER:
                tensor = self.tensor_of(any_value, index, param, must=True)
                tensors[index] = (tensor, self.inspect(sig.tensors[index], tensor))
                call_args.append(None)
            elif param.kind is ParamKind.HANDLE:
                call_args.append(self.handle_of(any_value, index, param))
            else:
                call_args.append(self.scalar_of(any_value, index, param))
        self.bind(tensors)
        for index, (tensor, shape) in tensors.items():
            call_args[index] = self.check_tensor(self.sig.tensors[index], tensor, shape)
        for index, param in enumerate(sig.params):
            if param.kind is ParamKind.SHAPE:
                call_args[index] = self.values[param.var]
        status = b.call(self.target, [a for a in call_args if a is not None])
        self.check(
            b.icmp_signed("!=", status, ir.Constant(T.I32, -1)),
            ffi.RUNTIME_ERROR,
            ffi.assertion_message(sig),
        )
        self.check(
            b.icmp_signed("==", status, ir.Constant(T.I32, 0)),
            ffi.RUNTIME_ERROR,
            f"{sig.name} returned %d",
            status,
        )
        b.ret(ir.Constant(T.I32, 0))
        ir.IRBuilder(self.entry).branch(self.function.basic_blocks[1])

    # -- arguments

    def position(self, index: int) -> ir.Value:
        """The argument's position in this call: the shape parameters may be left out."""
        full = ir.Constant(T.I32, index)
        short = ir.Constant(T.I32, self.sig.short_position(index))
        return (
            full if full.constant == short.constant else self.builder.select(self.full, full, short)
        )

    def type_index(self, any_value: ir.Value) -> ir.Value:
        return self.builder.load(any_value, typ=T.I32)

    def tensor_of(self, any_value: ir.Value, index: int, param: AbiParam, must: bool) -> ir.Value:
        """The DLTensor pointer of a Tensor or DLTensor* argument."""
        b = self.builder
        kind = self.type_index(any_value)
        pointer = self.load(any_value, 8, T.POINTER)
        is_tensor = b.icmp_signed("==", kind, ir.Constant(T.I32, ffi.TYPE_TENSOR))
        if must:
            ok = b.or_(
                is_tensor, b.icmp_signed("==", kind, ir.Constant(T.I32, ffi.TYPE_DLTENSOR_PTR))
            )
            self.check(
                ok,
                ffi.TYPE_ERROR,
                ffi.argument_message(self.sig, index, param, "a tensor"),
                self.type_name(kind),
            )
        header = b.gep(pointer, [ir.Constant(T.I64, ffi.OBJECT_HEADER_BYTES)], source_etype=T.I8)
        return b.select(is_tensor, header, pointer)

    def handle_of(self, any_value: ir.Value, index: int, param: AbiParam) -> ir.Value:
        b = self.builder
        kind = self.type_index(any_value)
        allowed = [ffi.TYPE_NONE, ffi.TYPE_OPAQUE_PTR, ffi.TYPE_DLTENSOR_PTR, ffi.TYPE_TENSOR]
        self.check(
            self.any_of(kind, allowed),
            ffi.TYPE_ERROR,
            ffi.argument_message(self.sig, index, param, "a pointer or a tensor"),
            self.type_name(kind),
        )
        pointer = self.load(any_value, 8, T.POINTER)
        is_tensor = self.any_of(kind, [ffi.TYPE_DLTENSOR_PTR, ffi.TYPE_TENSOR])
        tensor = self.tensor_of(any_value, index, param, must=False)
        start = b.block
        with b.if_then(is_tensor):  # a tensor's data, read only where the argument is one
            data = self.data_pointer(tensor, None)
            then = b.block
        result = b.phi(T.POINTER)
        result.add_incoming(pointer, start)
        result.add_incoming(data, then)
        return result

    def scalar_of(self, any_value: ir.Value, index: int, param: AbiParam) -> ir.Value:
        b = self.builder
        kind = self.type_index(any_value)
        wanted = param.abi_dtype
        if wanted.is_float:
            allowed, what = [ffi.TYPE_INT, ffi.TYPE_BOOL, ffi.TYPE_FLOAT], "a number"
        else:
            allowed, what = [ffi.TYPE_INT, ffi.TYPE_BOOL], "an int"
        self.check(
            self.any_of(kind, allowed),
            ffi.TYPE_ERROR,
            ffi.argument_message(self.sig, index, param, what),
            self.type_name(kind),
        )
        integer = self.load(any_value, 8, T.I64)
        if not wanted.is_float:
            return integer
        real = b.select(
            b.icmp_signed("==", kind, ir.Constant(T.I32, ffi.TYPE_FLOAT)),
            self.load(any_value, 8, DOUBLE),
            b.sitofp(integer, DOUBLE),
        )
        return real if wanted.bits == 64 else b.fptrunc(real, T.value_type(wanted))

    # -- tensors

    def inspect(self, tensor: TensorParam, pointer: ir.Value) -> list[ir.Value]:
        """Checks device, rank and dtype; the tensor's extents, as i64."""
        b = self.builder
        device = self.load(pointer, DEVICE_TYPE, T.I32)
        self.check(
            b.icmp_signed("==", device, ir.Constant(T.I32, ffi.DL_CPU)),
            ffi.VALUE_ERROR,
            ffi.device_message(self.sig, tensor, "the CPU"),
            self.device_name(device),
        )
        ndim = self.load(pointer, NDIM, T.I32)
        rank = len(tensor.shape)
        self.check(
            b.icmp_signed("==", ndim, ir.Constant(T.I32, rank)),
            ffi.VALUE_ERROR,
            ffi.rank_message(self.sig, tensor),
            ndim,
        )
        code = b.zext(self.load(pointer, DTYPE_CODE, T.I8), T.I32)
        bits = b.zext(self.load(pointer, DTYPE_BITS, T.I8), T.I32)
        lanes = b.zext(self.load(pointer, DTYPE_LANES, I16), T.I32)
        ok = b.and_(
            b.and_(
                b.icmp_signed("==", code, ir.Constant(T.I32, tensor.dl_code)),
                b.icmp_signed("==", bits, ir.Constant(T.I32, tensor.bits)),
            ),
            b.icmp_signed("==", lanes, ir.Constant(T.I32, tensor.lanes)),
        )
        single = self.string(ffi.dtype_message(self.sig, tensor, lanes=False))
        several = self.string(ffi.dtype_message(self.sig, tensor, lanes=True))
        message = b.select(b.icmp_signed("==", lanes, ir.Constant(T.I32, 1)), single, several)
        self.check_formatted(ok, ffi.TYPE_ERROR, message, self.code_name(code), bits, lanes)
        shape = self.load(pointer, SHAPE, T.POINTER)
        return [self.load(shape, 8 * i, T.I64) for i in range(rank)]

    def strides(
        self, tensor: TensorParam, pointer: ir.Value, shape: list[ir.Value]
    ) -> list[ir.Value]:
        """The tensor's strides in elements, the compact ones where it has none (NULL)."""
        b = self.builder
        compact: list[ir.Value] = []
        running: ir.Value = ir.Constant(T.I64, 1)
        for extent in reversed(shape):
            compact.insert(0, running)
            running = b.mul(running, extent)
        table = self.load(pointer, STRIDES, T.POINTER)
        is_null = b.icmp_unsigned("==", b.ptrtoint(table, T.I64), ir.Constant(T.I64, 0))
        slots = ir.IRBuilder(self.entry).alloca(ir.ArrayType(T.I64, max(1, len(shape))))
        slots.type = T.POINTER
        for i, value in enumerate(compact):
            b.store(value, b.gep(slots, [ir.Constant(T.I64, 8 * i)], source_etype=T.I8))
        table = b.select(is_null, slots, table)
        return [self.load(table, 8 * i, T.I64) for i in range(len(shape))]

    def bind(self, tensors: dict[int, tuple[ir.Value, list[ir.Value]]]) -> None:
        """The value of each shape variable: the argument passed for it in a full call, else
        the extent, stride or offset it is first read from."""
        b = self.builder
        told: dict[Var, ir.Value] = {}
        for index, (pointer, shape) in tensors.items():
            tensor = self.sig.tensors[index]
            strides = self.strides(tensor, pointer, shape)
            self.strides_of[index] = strides
            for dimension, value in zip(
                (*tensor.shape, *tensor.strides), (*shape, *strides), strict=True
            ):
                if dimension.binds is not None:
                    told[dimension.binds] = value
            if tensor.offset is not None:
                offset = self.load(pointer, BYTE_OFFSET, T.I64)
                size = ir.Constant(T.I64, tensor.element_bytes)
                self.check(
                    b.icmp_unsigned("==", b.urem(offset, size), ir.Constant(T.I64, 0)),
                    ffi.VALUE_ERROR,
                    ffi.offset_message(self.sig, tensor),
                    offset,
                )
                told[tensor.offset] = b.udiv(offset, size)
        self.values = dict(told)
        args = self.function.args[1]
        for index, param in enumerate(self.sig.params):
            if param.kind is not ParamKind.SHAPE:
                continue
            fallback = told.get(param.var, ir.Constant(T.I64, 0))
            start = b.block
            with b.if_then(self.full):
                at = b.gep(args, [ir.Constant(T.I32, index * ANY_BYTES)], source_etype=T.I8)
                kind = self.type_index(at)
                self.check(
                    self.any_of(kind, [ffi.TYPE_INT, ffi.TYPE_BOOL]),
                    ffi.TYPE_ERROR,
                    ffi.argument_message(self.sig, index, param, "an int"),
                    self.type_name(kind),
                )
                given = self.load(at, 8, T.I64)
                given_block = b.block
            value = b.phi(T.I64)
            value.add_incoming(fallback, start)
            value.add_incoming(given, given_block)
            self.values[param.var] = value

    def check_tensor(
        self, tensor: TensorParam, pointer: ir.Value, shape: list[ir.Value]
    ) -> ir.Value:
        """Checks extents, strides and alignment against the bound variables; the data
        pointer to pass."""
        b = self.builder
        strides = self.strides_of[self.index_of(tensor)]
        for dimension, value in zip(tensor.shape, shape, strict=True):
            self.check_dimension(dimension, value)
        compact: ir.Value = ir.Constant(T.I64, 1)
        expected: list[ir.Value] = []
        for extent in reversed(shape):
            expected.insert(0, compact)
            compact = b.mul(compact, extent)
        for dimension, value, extent, dense in zip(
            tensor.strides, strides, shape, expected, strict=True
        ):
            if dimension.expected is None:
                ok = b.or_(
                    b.icmp_signed("==", value, dense),
                    b.icmp_signed("==", extent, ir.Constant(T.I64, 1)),
                )
                self.check(
                    ok,
                    ffi.VALUE_ERROR,
                    ffi.compact_message(self.sig, tensor, dimension),
                    value,
                    dense,
                )
            else:
                self.check_dimension(dimension, value)
        data = self.data_pointer(pointer, tensor)
        if tensor.alignment > tensor.element_bytes:
            address = b.ptrtoint(data, T.I64)
            low = b.and_(address, ir.Constant(T.I64, tensor.alignment - 1))
            self.check(
                b.icmp_unsigned("==", low, ir.Constant(T.I64, 0)),
                ffi.VALUE_ERROR,
                ffi.alignment_message(self.sig, tensor),
                data,
            )
        return data

    def check_dimension(self, dimension: Dimension, value: ir.Value) -> None:
        b = self.builder
        expected = dimension.expected
        assert expected is not None
        message = ffi.dimension_message(self.sig, dimension)
        if isinstance(expected, IntImm):
            ok = b.icmp_signed("==", value, ir.Constant(T.I64, expected.value))
            self.check(ok, ffi.VALUE_ERROR, message, value)
            return
        want = self.evaluate(expected)
        ok = b.icmp_signed("==", value, want)
        if not isinstance(expected, Var):
            self.check(ok, ffi.VALUE_ERROR, message, value, want)
            return
        told = self.string(ffi.origin(self.sig, expected))
        if ffi.is_shape_argument(self.sig, expected):
            told = b.select(self.full, self.string("as passed"), told)
        self.check(ok, ffi.VALUE_ERROR, message, value, want, told)

    def evaluate(self, expr: PrimExpr) -> ir.Value:
        """`expr` over the bound shape variables, as i64."""
        if isinstance(expr, Var) and expr in self.values:
            return self.values[expr]
        em = Emitter(self.module, self.function, self.builder, lambda _: None)
        for var, value in self.values.items():
            em.env[var] = emit_cast(self.builder, value, dt.INT64, var.dtype)
        result = em.expr(expr)
        return emit_cast(self.builder, result, expr.dtype, dt.INT64)

    def data_pointer(self, pointer: ir.Value, tensor: TensorParam | None) -> ir.Value:
        b = self.builder
        data = self.load(pointer, DATA, T.POINTER)
        if tensor is not None and tensor.offset is not None:
            return data  # the program adds its element offset itself
        offset = self.load(pointer, BYTE_OFFSET, T.I64)
        return b.gep(data, [offset], source_etype=T.I8)

    def index_of(self, tensor: TensorParam) -> int:
        return next(i for i, t in self.sig.tensors.items() if t is tensor)

    # -- errors

    def check(self, ok: ir.Value, kind: str, message: str, *values: ir.Value) -> None:
        self.check_formatted(ok, kind, self.string(message), *values)

    def check_formatted(
        self, ok: ir.Value, kind: str, message: ir.Value, *values: ir.Value
    ) -> None:
        """Goes on where `ok`, else raises a tvm-ffi error of `kind` whose text is the
        printf format `message` of `values`, and returns -1."""
        b = self.builder
        fail = self.function.append_basic_block("fail")
        go_on = self.function.append_basic_block("ok")
        b.cbranch(ok, go_on, fail)
        b.position_at_end(fail)
        snprintf = self.declare("snprintf", T.I32, [T.POINTER, T.I64, T.POINTER], var_arg=True)
        b.call(snprintf, [self.message, ir.Constant(T.I64, MESSAGE_BYTES), message, *values])
        raise_error = self.declare("TVMFFIErrorSetRaisedFromCStr", T.VOID, [T.POINTER, T.POINTER])
        b.call(raise_error, [self.string(kind), self.message])
        b.ret(ir.Constant(T.I32, -1))
        b.position_at_end(go_on)

    def type_name(self, kind: ir.Value) -> ir.Value:
        return self.name_of(kind, ffi.TYPE_NAMES, "an object (type index %d)")

    def device_name(self, device: ir.Value) -> ir.Value:
        return self.name_of(device, ffi.DEVICE_NAMES, "device type %d")

    def code_name(self, code: ir.Value) -> ir.Value:
        return self.name_of(code, dict(enumerate(ffi.DL_CODE_NAMES)), "code %d:")

    def name_of(self, value: ir.Value, names: dict[int, str], other: str) -> ir.Value:
        """The name of an i32 `value` in `names`; `other` (which may format the value
        again) for any other."""
        b = self.builder
        result: ir.Value = self.string(other)
        for number, name in names.items():
            hit = b.icmp_signed("==", value, ir.Constant(T.I32, number))
            result = b.select(hit, self.string(name.replace("%", "%%")), result)
        return result

    # -- helpers

    def any_of(self, value: ir.Value, numbers: list[int]) -> ir.Value:
        b = self.builder
        result: ir.Value = ir.Constant(T.I1, 0)
        for number in numbers:
            result = b.or_(result, b.icmp_signed("==", value, ir.Constant(T.I32, number)))
        return result

    def load(self, pointer: ir.Value, offset: int, typ: ir.Type) -> ir.Value:
        b = self.builder
        at = (
            pointer
            if offset == 0
            else b.gep(pointer, [ir.Constant(T.I64, offset)], source_etype=T.I8)
        )
        return b.load(at, typ=typ)

    def string(self, text: str) -> ir.Value:
        data = bytearray(text.encode() + b"\0")
        typ = ir.ArrayType(T.I8, len(data))
        name = self.module.get_unique_name(f"{self.sig.packed_name}.text")
        variable = ir.GlobalVariable(self.module, typ, name)
        variable.linkage = "private"
        variable.global_constant = True
        variable.unnamed_addr = True
        variable.initializer = ir.Constant(typ, data)
        variable.type = T.POINTER  # as an alloca's: LLVM 22 has no typed pointers
        return variable

    def declare(
        self, name: str, result: ir.Type, args: list[ir.Type], var_arg: bool = False
    ) -> ir.Function:
        existing = self.module.globals.get(name)
        if isinstance(existing, ir.Function):
            return existing
        return ir.Function(self.module, ir.FunctionType(result, args, var_arg=var_arg), name)
