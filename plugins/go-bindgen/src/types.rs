//! The Go declarations of the WIT types the selected worlds use: a struct per record, a
//! named integer with constants per enum, and a generic struct per tuple arity.

use crate::bindings::Bindings;
use crate::names::pascal;
use anyhow::{bail, Context, Result};
use std::collections::BTreeSet;
use wit_parser::{Docs, Function, Int, Type, TypeDefKind, TypeId};

/// The named types and tuple arities `functions` reach.
#[derive(Default)]
pub struct UsedTypes {
    named: BTreeSet<TypeId>,
    tuples: BTreeSet<usize>,
}

impl UsedTypes {
    /// Adds what `function`'s parameters and result reach.
    pub fn add_function(&mut self, bindings: &Bindings, function: &Function) -> Result<()> {
        for param in &function.params {
            self.add(bindings, &param.ty)
                .with_context(|| format!("{}: parameter {}", function.name, param.name))?;
        }
        if let Some(result) = &function.result {
            self.add(bindings, result)
                .with_context(|| format!("{}: result", function.name))?;
        }
        Ok(())
    }

    fn add(&mut self, bindings: &Bindings, ty: &Type) -> Result<()> {
        let Type::Id(id) = bindings.unalias(ty) else {
            return Ok(());
        };
        let (id, kind) = bindings.definition(id);
        match kind {
            TypeDefKind::Record(record) => {
                if self.named.insert(id) {
                    for field in &record.fields {
                        self.add(bindings, &field.ty)?;
                    }
                }
            }
            TypeDefKind::Enum(_) => {
                self.named.insert(id);
            }
            TypeDefKind::List(inner) | TypeDefKind::Option(inner) => self.add(bindings, inner)?,
            TypeDefKind::Tuple(tuple) => {
                self.tuples.insert(tuple.types.len());
                for ty in &tuple.types {
                    self.add(bindings, ty)?;
                }
            }
            TypeDefKind::Result(result) => {
                for ty in result.ok.iter().chain(&result.err) {
                    self.add(bindings, ty)?;
                }
            }
            other => bail!("WIT {} is not supported", other.as_str()),
        }
        Ok(())
    }

    /// The body of `types.go` (package `wit`, every platform: plain data).
    pub fn declarations(&self, bindings: &Bindings, out: &mut String) -> Result<()> {
        for arity in &self.tuples {
            let params: Vec<String> = (0..*arity).map(|i| format!("T{i}")).collect();
            out.push_str(&format!(
                "\n// Tuple{arity} is a WIT tuple of {arity}.\ntype Tuple{arity}[{} any] struct {{\n",
                params.join(", ")
            ));
            for (i, param) in params.iter().enumerate() {
                out.push_str(&format!("F{i} {param}\n"));
            }
            out.push_str("}\n");
        }
        let mut names = BTreeSet::new();
        for &id in &self.named {
            let def = &bindings.resolve.types[id];
            let name = bindings.type_name(id)?;
            if !names.insert(name.clone()) {
                bail!("two WIT types are named {name} in Go: rename one");
            }
            out.push('\n');
            doc_comment(&def.docs, &name, out);
            match &def.kind {
                TypeDefKind::Record(record) => {
                    out.push_str(&format!("type {name} struct {{\n"));
                    for field in &record.fields {
                        doc_comment(&field.docs, "", out);
                        out.push_str(&format!(
                            "{} {}\n",
                            pascal(&field.name),
                            bindings.go_type(&field.ty, "")?
                        ));
                    }
                    out.push_str("}\n");
                }
                TypeDefKind::Enum(enumeration) => {
                    out.push_str(&format!(
                        "type {name} {}\n\nconst (\n",
                        int_type(enumeration.tag())
                    ));
                    for (i, case) in enumeration.cases.iter().enumerate() {
                        doc_comment(&case.docs, "", out);
                        let case_name = format!("{name}{}", pascal(&case.name));
                        if i == 0 {
                            out.push_str(&format!("{case_name} {name} = iota\n"));
                        } else {
                            out.push_str(&format!("{case_name}\n"));
                        }
                    }
                    out.push_str(")\n");
                }
                other => bail!("{name}: WIT {} is not supported", other.as_str()),
            }
        }
        Ok(())
    }
}

/// The Go integer of a discriminant.
pub fn int_type(tag: Int) -> &'static str {
    match tag {
        Int::U8 => "uint8",
        Int::U16 => "uint16",
        Int::U32 => "uint32",
        Int::U64 => "uint64",
    }
}

/// `docs` as a Go comment; `name`, when given, starts it as Go's doc comments do.
pub fn doc_comment(docs: &Docs, name: &str, out: &mut String) {
    // wit-parser keeps the plain `//` comments before an item too; a `// ---- ...` line heads
    // a section of the WIT file and says nothing of the item.
    let lines: Vec<&str> = docs
        .contents
        .as_deref()
        .unwrap_or_default()
        .lines()
        .map(str::trim_end)
        .filter(|line| !line.starts_with("----"))
        .collect();
    if lines.is_empty() {
        if !name.is_empty() {
            out.push_str(&format!("// {name} is generated from WIT.\n"));
        }
        return;
    }
    for (i, line) in lines.iter().enumerate() {
        if i == 0 && !name.is_empty() {
            out.push_str(&format!("// {name}: {line}\n"));
        } else if line.is_empty() {
            out.push_str("//\n");
        } else {
            out.push_str(&format!("// {line}\n"));
        }
    }
}
