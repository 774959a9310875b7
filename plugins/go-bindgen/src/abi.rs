//! Lifting and lowering: the Go code that reads a WIT value from flat core values or linear
//! memory, and writes one into them, following the canonical ABI's layout (sizes, alignments
//! and flattening from `wit-parser`). Strings and lists cross as (pointer, length) into Go's
//! heap, which shares the linear memory; the runtime package (`cabi`) keeps what it hands
//! out alive until the next export call.

use crate::bindings::Bindings;
use crate::names::pascal;
use crate::types::int_type;
use anyhow::{bail, Result};
use std::collections::VecDeque;
use wit_parser::abi::WasmType;
use wit_parser::{Type, TypeDefKind};

/// A linear-memory address in generated code: a Go `uint32` expression and a constant offset.
#[derive(Clone)]
pub struct Addr {
    base: String,
    offset: usize,
}

impl Addr {
    pub fn new(base: impl Into<String>) -> Self {
        Self {
            base: base.into(),
            offset: 0,
        }
    }

    /// This address plus `offset` bytes.
    pub fn at(&self, offset: usize) -> Self {
        Self {
            base: self.base.clone(),
            offset: self.offset + offset,
        }
    }

    fn expr(&self) -> String {
        match self.offset {
            0 => self.base.clone(),
            offset => format!("{}+{offset}", self.base),
        }
    }
}

/// The Go type of a core value.
pub fn core_type(ty: WasmType) -> &'static str {
    match ty {
        WasmType::I32 | WasmType::Pointer | WasmType::Length => "uint32",
        WasmType::I64 | WasmType::PointerOrI64 => "uint64",
        WasmType::F32 => "float32",
        WasmType::F64 => "float64",
    }
}

/// Code generation for one Go package: `qualifier` prefixes the generated named types.
pub struct Abi<'b, 'a> {
    pub bindings: &'b Bindings<'a>,
    pub qualifier: &'static str,
    /// Whether what is lowered are an import's arguments, which the host reads only during
    /// the call: strings and lists of numbers are then passed in place (the caller keeps them
    /// alive across the call) instead of kept until the next export.
    pub arguments: bool,
}

impl Abi<'_, '_> {
    fn go_type(&self, ty: &Type) -> Result<String> {
        self.bindings.go_type(ty, self.qualifier)
    }

    /// The runtime function that passes a string: in place for an import's arguments, kept
    /// otherwise.
    fn string_call(&self) -> &'static str {
        if self.arguments {
            "StringArg"
        } else {
            "KeepString"
        }
    }

    /// A Go expression of the `ty` stored at `addr`.
    pub fn lift_mem(&self, ty: &Type, addr: &Addr) -> Result<String> {
        let a = addr.expr();
        Ok(match self.bindings.unalias(ty) {
            Type::Bool => format!("cabi.Load8({a}) != 0"),
            Type::U8 => format!("cabi.Load8({a})"),
            Type::S8 => format!("int8(cabi.Load8({a}))"),
            Type::U16 => format!("cabi.Load16({a})"),
            Type::S16 => format!("int16(cabi.Load16({a}))"),
            Type::U32 => format!("cabi.Load32({a})"),
            Type::S32 => format!("int32(cabi.Load32({a}))"),
            Type::U64 => format!("cabi.Load64({a})"),
            Type::S64 => format!("int64(cabi.Load64({a}))"),
            Type::F32 => format!("cabi.LoadF32({a})"),
            Type::F64 => format!("cabi.LoadF64({a})"),
            Type::Char => format!("rune(cabi.Load32({a}))"),
            Type::String => format!(
                "cabi.String(cabi.Load32({a}), cabi.Load32({}))",
                addr.at(4).expr()
            ),
            Type::ErrorContext => bail!("error-context is not supported"),
            Type::Id(id) => {
                let (_, kind) = self.bindings.definition(id);
                match kind {
                    TypeDefKind::Record(record) => {
                        let types = record.fields.iter().map(|f| &f.ty);
                        let offsets = self.bindings.sizes.field_offsets(types);
                        let mut fields = Vec::new();
                        for (field, (offset, ty)) in record.fields.iter().zip(offsets) {
                            let at = addr.at(offset.size_wasm32());
                            fields.push(format!(
                                "{}: {}",
                                pascal(&field.name),
                                self.lift_mem(ty, &at)?
                            ));
                        }
                        format!("{}{{\n{},\n}}", self.go_type(ty)?, fields.join(",\n"))
                    }
                    TypeDefKind::Tuple(tuple) => {
                        let offsets = self.bindings.sizes.field_offsets(tuple.types.iter());
                        let mut fields = Vec::new();
                        for (i, (offset, ty)) in offsets.into_iter().enumerate() {
                            let at = addr.at(offset.size_wasm32());
                            fields.push(format!("F{i}: {}", self.lift_mem(ty, &at)?));
                        }
                        format!("{}{{{}}}", self.go_type(ty)?, fields.join(", "))
                    }
                    TypeDefKind::Enum(enumeration) => {
                        let bits = &int_type(enumeration.tag())[4..];
                        format!("{}(cabi.Load{bits}({a}))", self.go_type(ty)?)
                    }
                    TypeDefKind::List(elem) => {
                        let p = format!("cabi.Load32({a})");
                        let n = format!("cabi.Load32({})", addr.at(4).expr());
                        self.lift_list(elem, &p, &n)?
                    }
                    TypeDefKind::Option(inner) => {
                        let payload = self
                            .bindings
                            .sizes
                            .payload_offset(wit_parser::Int::U8, [None, Some(inner)]);
                        let at = addr.at(payload.size_wasm32());
                        format!(
                            "cabi.Option(cabi.Load8({a}) != 0, func() {} {{ return {} }})",
                            self.go_type(inner)?,
                            self.lift_mem(inner, &at)?
                        )
                    }
                    TypeDefKind::Result(_) => {
                        bail!("result is supported only as a function's result")
                    }
                    other => bail!("WIT {} is not supported", other.as_str()),
                }
            }
        })
    }

    /// A Go expression of the list at (`p`, `n`), copied out of linear memory.
    fn lift_list(&self, elem: &Type, p: &str, n: &str) -> Result<String> {
        Ok(match self.bindings.unalias(elem) {
            Type::U8 => format!("cabi.Bytes({p}, {n})"),
            ty if self.bindings.is_primitive(&ty) => {
                format!("cabi.Copy[{}]({p}, {n})", self.go_type(elem)?)
            }
            _ => {
                let e = self.bindings.local("e");
                format!(
                    "cabi.List({p}, {n}, {}, func({e} uint32) {} {{ return {} }})",
                    self.bindings.size(elem),
                    self.go_type(elem)?,
                    self.lift_mem(elem, &Addr::new(e.clone()))?
                )
            }
        })
    }

    /// A Go expression of the `ty` whose flat core values are the next of `flat`.
    pub fn lift_flat(&self, ty: &Type, flat: &mut VecDeque<String>) -> Result<String> {
        let mut next = || {
            flat.pop_front()
                .ok_or_else(|| anyhow::anyhow!("too few core values"))
        };
        Ok(match self.bindings.unalias(ty) {
            Type::Bool => format!("{} != 0", next()?),
            Type::U8 => format!("uint8({})", next()?),
            Type::S8 => format!("int8({})", next()?),
            Type::U16 => format!("uint16({})", next()?),
            Type::S16 => format!("int16({})", next()?),
            Type::U32 | Type::U64 | Type::F32 | Type::F64 => next()?,
            Type::S32 => format!("int32({})", next()?),
            Type::S64 => format!("int64({})", next()?),
            Type::Char => format!("rune({})", next()?),
            Type::String => {
                let (p, n) = (next()?, next()?);
                format!("cabi.String({p}, {n})")
            }
            Type::ErrorContext => bail!("error-context is not supported"),
            Type::Id(id) => {
                let (_, kind) = self.bindings.definition(id);
                match kind {
                    TypeDefKind::Record(record) => {
                        let mut fields = Vec::new();
                        for field in &record.fields {
                            fields.push(format!(
                                "{}: {}",
                                pascal(&field.name),
                                self.lift_flat(&field.ty, flat)?
                            ));
                        }
                        format!("{}{{\n{},\n}}", self.go_type(ty)?, fields.join(",\n"))
                    }
                    TypeDefKind::Tuple(tuple) => {
                        let mut fields = Vec::new();
                        for (i, ty) in tuple.types.iter().enumerate() {
                            fields.push(format!("F{i}: {}", self.lift_flat(ty, flat)?));
                        }
                        format!("{}{{{}}}", self.go_type(ty)?, fields.join(", "))
                    }
                    TypeDefKind::Enum(_) => format!("{}({})", self.go_type(ty)?, next()?),
                    TypeDefKind::List(elem) => {
                        let (p, n) = (next()?, next()?);
                        self.lift_list(elem, &p, &n)?
                    }
                    other => bail!(
                        "WIT {} as a flat parameter is not supported",
                        other.as_str()
                    ),
                }
            }
        })
    }

    /// Statements that store the Go value `value` of `ty` at `addr`. `value` is evaluated
    /// more than once: an identifier or a selector.
    pub fn lower_mem(&self, ty: &Type, value: &str, addr: &Addr, out: &mut String) -> Result<()> {
        let a = addr.expr();
        let store = |bits: &str, conversion: &str| {
            format!("cabi.Store{bits}({a}, {conversion}({value}))\n")
        };
        match self.bindings.unalias(ty) {
            Type::Bool => out.push_str(&format!("cabi.Store8({a}, cabi.Bool8({value}))\n")),
            Type::U8 | Type::S8 => out.push_str(&store("8", "uint8")),
            Type::U16 | Type::S16 => out.push_str(&store("16", "uint16")),
            Type::U32 | Type::S32 | Type::Char => out.push_str(&store("32", "uint32")),
            Type::U64 | Type::S64 => out.push_str(&store("64", "uint64")),
            Type::F32 => out.push_str(&format!("cabi.StoreF32({a}, {value})\n")),
            Type::F64 => out.push_str(&format!("cabi.StoreF64({a}, {value})\n")),
            Type::String => {
                let s = self.bindings.local("s");
                out.push_str(&format!(
                    "{s}p, {s}n := cabi.{}({value})\ncabi.Store32({a}, {s}p)\ncabi.Store32({}, {s}n)\n",
                    self.string_call(),
                    addr.at(4).expr()
                ));
            }
            Type::ErrorContext => bail!("error-context is not supported"),
            Type::Id(id) => {
                let (_, kind) = self.bindings.definition(id);
                match kind {
                    TypeDefKind::Record(record) => {
                        let offsets = self
                            .bindings
                            .sizes
                            .field_offsets(record.fields.iter().map(|f| &f.ty));
                        for (field, (offset, ty)) in record.fields.iter().zip(offsets) {
                            let value = format!("{value}.{}", pascal(&field.name));
                            self.lower_mem(ty, &value, &addr.at(offset.size_wasm32()), out)?;
                        }
                    }
                    TypeDefKind::Tuple(tuple) => {
                        let offsets = self.bindings.sizes.field_offsets(tuple.types.iter());
                        for (i, (offset, ty)) in offsets.into_iter().enumerate() {
                            let value = format!("{value}.F{i}");
                            self.lower_mem(ty, &value, &addr.at(offset.size_wasm32()), out)?;
                        }
                    }
                    TypeDefKind::Enum(enumeration) => {
                        let int = int_type(enumeration.tag());
                        out.push_str(&store(&int[4..], int));
                    }
                    TypeDefKind::List(elem) => {
                        let (p, n) = self.lower_list(elem, value, out)?;
                        out.push_str(&format!(
                            "cabi.Store32({a}, {p})\ncabi.Store32({}, {n})\n",
                            addr.at(4).expr()
                        ));
                    }
                    TypeDefKind::Option(inner) => {
                        let payload = self
                            .bindings
                            .sizes
                            .payload_offset(wit_parser::Int::U8, [None, Some(inner)]);
                        out.push_str(&format!(
                            "if {value} == nil {{\ncabi.Store8({a}, 0)\n}} else {{\ncabi.Store8({a}, 1)\n"
                        ));
                        let inner_value = format!("(*{value})");
                        self.lower_mem(inner, &inner_value, &addr.at(payload.size_wasm32()), out)?;
                        out.push_str("}\n");
                    }
                    TypeDefKind::Result(_) => {
                        bail!("result is supported only as a function's result")
                    }
                    other => bail!("WIT {} is not supported", other.as_str()),
                }
            }
        }
        Ok(())
    }

    /// Statements that put the list `value` of `elem` in memory the host may read until the
    /// next export call; returns the Go expressions of its pointer and length.
    fn lower_list(&self, elem: &Type, value: &str, out: &mut String) -> Result<(String, String)> {
        let l = self.bindings.local("l");
        if self.bindings.is_primitive(elem) {
            let call = if self.arguments {
                "SliceArg"
            } else {
                "KeepSlice"
            };
            out.push_str(&format!("{l}p, {l}n := cabi.{call}({value})\n"));
            return Ok((format!("{l}p"), format!("{l}n")));
        }
        let (size, align) = (self.bindings.size(elem), self.bindings.align(elem));
        let (i, e) = (self.bindings.local("i"), self.bindings.local("e"));
        out.push_str(&format!(
            "{l} := cabi.Alloc(uint32(len({value}))*{size}, {align})\nfor {i}, {e} := range {value} {{\n"
        ));
        let at = Addr::new(format!("{l}+uint32({i})*{size}"));
        self.lower_mem(elem, &e, &at, out)?;
        out.push_str("}\n");
        Ok((l, format!("uint32(len({value}))")))
    }

    /// Statements that make the flat core values of the Go value `value` of `ty`; returns
    /// their Go expressions.
    pub fn lower_flat(&self, ty: &Type, value: &str, out: &mut String) -> Result<Vec<String>> {
        Ok(match self.bindings.unalias(ty) {
            Type::Bool => vec![format!("cabi.Bool({value})")],
            Type::U8 | Type::U16 | Type::U32 | Type::S8 | Type::S16 | Type::S32 | Type::Char => {
                vec![format!("uint32({value})")]
            }
            Type::U64 | Type::S64 => vec![format!("uint64({value})")],
            Type::F32 | Type::F64 => vec![value.to_string()],
            Type::String => {
                let s = self.bindings.local("s");
                out.push_str(&format!(
                    "{s}p, {s}n := cabi.{}({value})\n",
                    self.string_call()
                ));
                vec![format!("{s}p"), format!("{s}n")]
            }
            Type::ErrorContext => bail!("error-context is not supported"),
            Type::Id(id) => {
                let (_, kind) = self.bindings.definition(id);
                match kind {
                    TypeDefKind::Record(record) => {
                        let mut flat = Vec::new();
                        for field in &record.fields {
                            let value = format!("{value}.{}", pascal(&field.name));
                            flat.extend(self.lower_flat(&field.ty, &value, out)?);
                        }
                        flat
                    }
                    TypeDefKind::Tuple(tuple) => {
                        let mut flat = Vec::new();
                        for (i, ty) in tuple.types.iter().enumerate() {
                            flat.extend(self.lower_flat(ty, &format!("{value}.F{i}"), out)?);
                        }
                        flat
                    }
                    TypeDefKind::Enum(_) => vec![format!("uint32({value})")],
                    TypeDefKind::List(elem) => {
                        let (p, n) = self.lower_list(elem, value, out)?;
                        vec![p, n]
                    }
                    other => bail!(
                        "WIT {} as a flat parameter is not supported",
                        other.as_str()
                    ),
                }
            }
        })
    }
}
