//! The functions: a Go wrapper around each import (over a `//go:wasmimport` declaration) and
//! a `//go:wasmexport` function per export that lifts its arguments, calls the world's Go
//! implementation and lowers what it returns.

use crate::abi::{core_type, Abi, Addr};
use crate::bindings::Bindings;
use crate::names::{camel, pascal};
use crate::types::doc_comment;
use anyhow::{bail, Context, Result};
use std::collections::VecDeque;
use wit_parser::abi::{AbiVariant, WasmSignature};
use wit_parser::{Function, Int, Type, TypeDefKind};

/// How a WIT result maps to Go results.
enum Shape<'t> {
    /// No result.
    Nothing,
    /// A value of the type.
    Value(&'t Type),
    /// `result<_, string>`: a Go `error`; the message is at the offset.
    Error(usize),
    /// `result<T, string>`: `(T, error)`; the payload (either) is at the offset.
    ValueOrError(Type, usize),
}

impl<'t> Shape<'t> {
    fn of(bindings: &Bindings, function: &'t Function) -> Result<Self> {
        let Some(ty) = &function.result else {
            return Ok(Self::Nothing);
        };
        let Type::Id(id) = bindings.unalias(ty) else {
            return Ok(Self::Value(ty));
        };
        let TypeDefKind::Result(result) = bindings.definition(id).1 else {
            return Ok(Self::Value(ty));
        };
        if result.err.map(|err| bindings.unalias(&err)) != Some(Type::String) {
            bail!("a result's error must be a string (it becomes a Go error)");
        }
        let payload = bindings
            .sizes
            .payload_offset(Int::U8, [result.ok.as_ref(), result.err.as_ref()])
            .size_wasm32();
        Ok(match &result.ok {
            None => Self::Error(payload),
            Some(ok) => Self::ValueOrError(*ok, payload),
        })
    }

    fn go_results(&self, abi: &Abi) -> Result<String> {
        Ok(match self {
            Self::Nothing => String::new(),
            Self::Value(ty) => abi.bindings.go_type(ty, abi.qualifier)?,
            Self::Error(_) => "error".into(),
            Self::ValueOrError(ty, _) => {
                format!("({}, error)", abi.bindings.go_type(ty, abi.qualifier)?)
            }
        })
    }
}

/// The Go parameter list of `function`.
fn go_params(abi: &Abi, function: &Function) -> Result<String> {
    let params = function
        .params
        .iter()
        .map(|p| {
            Ok(format!(
                "{} {}",
                camel(&p.name),
                abi.bindings.go_type(&p.ty, abi.qualifier)?
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(params.join(", "))
}

/// The core function's Go parameter list and result.
fn core_signature(signature: &WasmSignature) -> (String, String) {
    let params = signature
        .params
        .iter()
        .enumerate()
        .map(|(i, ty)| format!("c{i} {}", core_type(*ty)))
        .collect::<Vec<_>>();
    let results = signature.results.first().map_or("", |ty| core_type(*ty));
    (params.join(", "), results.to_string())
}

/// The bytes `function`'s return area needs (0 when its result is not returned in memory).
fn return_area(abi: &Abi, signature: &WasmSignature, function: &Function) -> usize {
    match (&function.result, signature.retptr) {
        (Some(ty), true) => abi.bindings.size(ty),
        _ => 0,
    }
}

/// The wrapper `go_name` around the import `name` of `module`, with its declaration; returns
/// the bytes of return area it needs.
pub fn import(
    abi: &Abi,
    module: &str,
    go_name: &str,
    function: &Function,
    out: &mut String,
) -> Result<usize> {
    abi.bindings.reset_locals();
    let context = || format!("import {module} {}", function.name);
    let shape = Shape::of(abi.bindings, function).with_context(context)?;
    let signature = abi
        .bindings
        .resolve
        .wasm_signature(AbiVariant::GuestImport, function);
    let (core_params, core_result) = core_signature(&signature);
    let core = format!("import{go_name}");
    out.push_str(&format!(
        "\n//go:wasmimport {module} {}\nfunc {core}({core_params}) {core_result}\n",
        function.name
    ));
    let mut body = String::new();
    let mut args = Vec::new();
    if signature.indirect_params {
        let types: Vec<&Type> = function.params.iter().map(|p| &p.ty).collect();
        let layout = abi.bindings.sizes.params(types.iter().copied());
        let buffer = abi.bindings.local("params");
        body.push_str(&format!(
            "{buffer} := cabi.Alloc({}, {})\n",
            layout.size.size_wasm32(),
            layout.align.align_wasm32()
        ));
        let offsets = abi.bindings.sizes.field_offsets(types.iter().copied());
        for (param, (offset, ty)) in function.params.iter().zip(offsets) {
            let at = Addr::new(buffer.clone()).at(offset.size_wasm32());
            abi.lower_mem(ty, &camel(&param.name), &at, &mut body)
                .with_context(context)?;
        }
        args.push(buffer);
    } else {
        for param in &function.params {
            args.extend(
                abi.lower_flat(&param.ty, &camel(&param.name), &mut body)
                    .with_context(context)?,
            );
        }
    }
    if signature.retptr {
        body.push_str("area := cabi.Addr(unsafe.Pointer(&importArea[0]))\n");
        args.push("area".into());
    }
    // Strings and lists went in place: they stay alive until the host has read them.
    let alive: String = function
        .params
        .iter()
        .filter(|p| abi.bindings.holds_memory(&p.ty))
        .map(|p| format!("runtime.KeepAlive({})\n", camel(&p.name)))
        .collect();
    let call = format!("{core}({})\n{alive}", args.join(", "));
    let call = call.trim_end();
    let area = Addr::new("area");
    match (&shape, signature.retptr) {
        (Shape::Nothing, _) => body.push_str(&format!("{call}\n")),
        (Shape::Value(ty), false) => {
            body.push_str(&format!("ret := {call}\n"));
            let mut flat = VecDeque::from(["ret".to_string()]);
            body.push_str(&format!(
                "return {}\n",
                abi.lift_flat(ty, &mut flat).with_context(context)?
            ));
        }
        (Shape::Value(ty), true) => {
            body.push_str(&format!(
                "{call}\nreturn {}\n",
                abi.lift_mem(ty, &area).with_context(context)?
            ));
        }
        (Shape::Error(payload), true) => {
            let message = abi.lift_mem(&Type::String, &area.at(*payload))?;
            body.push_str(&format!(
                "{call}\nif cabi.Load8(area) != 0 {{\nreturn errors.New({message})\n}}\nreturn nil\n"
            ));
        }
        (Shape::ValueOrError(ty, payload), true) => {
            let message = abi.lift_mem(&Type::String, &area.at(*payload))?;
            let value = abi.lift_mem(ty, &area.at(*payload)).with_context(context)?;
            body.push_str(&format!(
                "{call}\nif cabi.Load8(area) != 0 {{\nvar zero {}\nreturn zero, errors.New({message})\n}}\nreturn {value}, nil\n",
                abi.bindings.go_type(ty, abi.qualifier)?
            ));
        }
        _ => bail!("{}: a result in core values is not supported", context()),
    }
    out.push_str(&format!(
        "\n// {go_name} calls {} of {module}.\nfunc {go_name}({}) {} {{\n{body}}}\n",
        function.name,
        go_params(abi, function)?,
        shape.go_results(abi)?
    ));
    Ok(return_area(abi, &signature, function))
}

/// The `//go:wasmexport core_name` function that calls `Impl.method` into `out`, and
/// `method` with its documentation into `methods` (the world's `Exports` interface);
/// returns the bytes of return area it needs.
pub fn export(
    abi: &Abi,
    world: &str,
    core_name: &str,
    method: &str,
    function: &Function,
    out: &mut String,
    methods: &mut String,
) -> Result<usize> {
    abi.bindings.reset_locals();
    let context = || format!("export {core_name}");
    let shape = Shape::of(abi.bindings, function).with_context(context)?;
    doc_comment(&function.docs, "", methods);
    methods.push_str(&format!(
        "{method}({}) {}\n",
        go_params(abi, function)?,
        shape.go_results(abi)?
    ));
    let signature = abi
        .bindings
        .resolve
        .wasm_signature(AbiVariant::GuestExport, function);
    let (core_params, core_result) = core_signature(&signature);
    let mut body = format!(
        "defer cabi.Guard()\ncabi.Begin()\ndefer cabi.End()\nif Impl == nil {{\npanic(\"no implementation of world {world} is registered\")\n}}\n"
    );
    let names: Vec<String> = function.params.iter().map(|p| camel(&p.name)).collect();
    if signature.indirect_params {
        let offsets = abi
            .bindings
            .sizes
            .field_offsets(function.params.iter().map(|p| &p.ty));
        for (name, (offset, ty)) in names.iter().zip(offsets) {
            let value = abi
                .lift_mem(ty, &Addr::new("c0").at(offset.size_wasm32()))
                .with_context(context)?;
            body.push_str(&format!("{name} := {value}\n"));
        }
    } else {
        let mut flat: VecDeque<String> = (0..signature.params.len())
            .map(|i| format!("c{i}"))
            .collect();
        for (name, param) in names.iter().zip(&function.params) {
            let value = abi.lift_flat(&param.ty, &mut flat).with_context(context)?;
            body.push_str(&format!("{name} := {value}\n"));
        }
    }
    let call = format!("Impl.{method}({})", names.join(", "));
    let area = Addr::new("area");
    if signature.retptr {
        body.push_str("area := cabi.Addr(unsafe.Pointer(&exportArea[0]))\n");
    }
    match (&shape, signature.retptr) {
        (Shape::Nothing, _) => body.push_str(&format!("{call}\n")),
        (Shape::Value(ty), false) => {
            body.push_str(&format!("ret := {call}\n"));
            let flat = abi.lower_flat(ty, "ret", &mut body).with_context(context)?;
            body.push_str(&format!("return {}\n", flat.join(", ")));
        }
        (Shape::Value(ty), true) => {
            body.push_str(&format!("ret := {call}\n"));
            abi.lower_mem(ty, "ret", &area, &mut body)
                .with_context(context)?;
            body.push_str("return area\n");
        }
        (Shape::Error(payload), true) | (Shape::ValueOrError(_, payload), true) => {
            let at = area.at(*payload);
            let mut failed = String::new();
            abi.lower_mem(&Type::String, "message", &at, &mut failed)?;
            let mut ok = String::new();
            if let Shape::ValueOrError(ty, _) = &shape {
                body.push_str(&format!("ret, err := {call}\n"));
                abi.lower_mem(ty, "ret", &at, &mut ok)
                    .with_context(context)?;
            } else {
                body.push_str(&format!("err := {call}\n"));
            }
            body.push_str(&format!(
                "if err != nil {{\ncabi.Store8(area, 1)\nmessage := err.Error()\n{failed}return area\n}}\ncabi.Store8(area, 0)\n{ok}return area\n"
            ));
        }
        _ => bail!("{}: a result in core values is not supported", context()),
    }
    out.push_str(&format!(
        "\n//go:wasmexport {core_name}\nfunc export{method}({core_params}) {core_result} {{\n{body}}}\n"
    ));
    Ok(return_area(abi, &signature, function))
}

/// The Go name of a function of an interface (`host`, `log` → `HostLog`) or of the world.
pub fn go_name(interface: Option<&str>, function: &str) -> String {
    format!(
        "{}{}",
        interface.map(pascal).unwrap_or_default(),
        pascal(function)
    )
}
