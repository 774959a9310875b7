//! What every part of the generator shares: the resolved WIT package, the canonical ABI's
//! sizes and alignments, fresh local names, and the Go spelling of a WIT type.

use crate::names::pascal;
use anyhow::{bail, Result};
use std::cell::Cell;
use wit_parser::{Resolve, SizeAlign, Type, TypeDefKind, TypeId};

/// The resolved package and the layout of its types.
pub struct Bindings<'a> {
    pub resolve: &'a Resolve,
    pub sizes: SizeAlign,
    next_local: Cell<usize>,
}

impl<'a> Bindings<'a> {
    pub fn new(resolve: &'a Resolve) -> Result<Self> {
        let mut sizes = SizeAlign::default();
        sizes.fill(resolve)?;
        Ok(Self {
            resolve,
            sizes,
            next_local: Cell::new(0),
        })
    }

    /// A local name no other generated local uses, for `prefix`.
    pub fn local(&self, prefix: &str) -> String {
        let n = self.next_local.get() + 1;
        self.next_local.set(n);
        format!("{prefix}{n}")
    }

    /// Starts the numbering of locals again (each function on its own).
    pub fn reset_locals(&self) {
        self.next_local.set(0);
    }

    /// The size of `ty` in linear memory (wasm32).
    pub fn size(&self, ty: &Type) -> usize {
        self.sizes.size(ty).size_wasm32()
    }

    /// The alignment of `ty` in linear memory (wasm32).
    pub fn align(&self, ty: &Type) -> usize {
        self.sizes.align(ty).align_wasm32()
    }

    /// The type definition `id` names, through `use` aliases.
    pub fn definition(&self, mut id: TypeId) -> (TypeId, &'a TypeDefKind) {
        loop {
            match &self.resolve.types[id].kind {
                TypeDefKind::Type(Type::Id(next)) => id = *next,
                kind => return (id, kind),
            }
        }
    }

    /// `ty` with `use` aliases of primitives followed.
    pub fn unalias(&self, ty: &Type) -> Type {
        let mut ty = *ty;
        while let Type::Id(id) = ty {
            match &self.resolve.types[id].kind {
                TypeDefKind::Type(next) => ty = *next,
                _ => break,
            }
        }
        ty
    }

    /// The Go name of a named WIT type.
    pub fn type_name(&self, id: TypeId) -> Result<String> {
        let (id, _) = self.definition(id);
        match &self.resolve.types[id].name {
            Some(name) => Ok(pascal(name)),
            None => bail!("an anonymous type has no Go name"),
        }
    }

    /// The Go type of `ty`; `qualifier` (`"wit."` or `""`) prefixes the generated named types.
    pub fn go_type(&self, ty: &Type, qualifier: &str) -> Result<String> {
        Ok(match self.unalias(ty) {
            Type::Bool => "bool".into(),
            Type::U8 => "uint8".into(),
            Type::U16 => "uint16".into(),
            Type::U32 => "uint32".into(),
            Type::U64 => "uint64".into(),
            Type::S8 => "int8".into(),
            Type::S16 => "int16".into(),
            Type::S32 => "int32".into(),
            Type::S64 => "int64".into(),
            Type::F32 => "float32".into(),
            Type::F64 => "float64".into(),
            Type::Char => "rune".into(),
            Type::String => "string".into(),
            Type::ErrorContext => bail!("error-context is not supported"),
            Type::Id(id) => {
                let (id, kind) = self.definition(id);
                match kind {
                    TypeDefKind::Record(_) | TypeDefKind::Enum(_) => {
                        format!("{qualifier}{}", self.type_name(id)?)
                    }
                    TypeDefKind::List(Type::U8) => "[]byte".into(),
                    TypeDefKind::List(elem) => format!("[]{}", self.go_type(elem, qualifier)?),
                    TypeDefKind::Option(inner) => format!("*{}", self.go_type(inner, qualifier)?),
                    TypeDefKind::Tuple(tuple) => {
                        let types = tuple
                            .types
                            .iter()
                            .map(|ty| self.go_type(ty, qualifier))
                            .collect::<Result<Vec<_>>>()?;
                        format!("{qualifier}Tuple{}[{}]", types.len(), types.join(", "))
                    }
                    TypeDefKind::Result(_) => {
                        bail!("result is supported only as a function's result")
                    }
                    other => bail!("WIT {} is not supported", other.as_str()),
                }
            }
        })
    }

    /// Whether a value of `ty` points into memory (a string or list, or holds one).
    pub fn holds_memory(&self, ty: &Type) -> bool {
        match self.unalias(ty) {
            Type::String => true,
            Type::Id(id) => match self.definition(id).1 {
                TypeDefKind::List(_) => true,
                TypeDefKind::Record(record) => {
                    record.fields.iter().any(|f| self.holds_memory(&f.ty))
                }
                TypeDefKind::Tuple(tuple) => tuple.types.iter().any(|ty| self.holds_memory(ty)),
                TypeDefKind::Option(inner) => self.holds_memory(inner),
                _ => false,
            },
            _ => false,
        }
    }

    /// Whether `ty` is a number, bool or char: stored in memory as Go stores it, so a list
    /// of them is a Go slice as it is.
    pub fn is_primitive(&self, ty: &Type) -> bool {
        !matches!(
            self.unalias(ty),
            Type::String | Type::Id(_) | Type::ErrorContext
        )
    }
}
