//! Gives the WASI preview1 adapter memory that Go's runtime never touches.
//!
//! The adapter allocates its state and stack on the first WASI call, with the main module's
//! `cabi_realloc`. In a Go `c-shared` module that first call comes from the runtime's own
//! start-up (`runtime.write`, `random_get`), on the system stack, where re-entering Go through
//! a `//go:wasmexport` is fatal (`badsystemstack`). Letting the adapter `memory.grow` instead
//! is no better: Go's `sbrk` assumes it owns all memory past its break and would hand those
//! pages out again.
//!
//! So the Go SDK reserves a static array (`internal/cabi`, `adapterArena`) that starts with
//! [`MARKER`] (followed there by non-zero bytes: Go's linker ends a data segment at 8 zero
//! bytes, which would cut the marker's NUL off); this finds it in the data segments and adds a `cabi_realloc_adapter` export, a
//! bump allocator over that array written in plain Wasm (no Go runtime involved), which
//! `wit-component` hands to the adapter in place of `cabi_realloc`. The bump pointer lives in
//! the array's first bytes after the marker; an allocation past the end traps.

use anyhow::{bail, Context, Result};
use wasm_encoder::{
    CodeSection, ExportKind, ExportSection, Function, FunctionSection, Instruction, MemArg,
    RawSection, ValType,
};
use wasmparser::{DataKind, ExternalKind, Operator, Parser, Payload, TypeRef};

/// The first bytes of the Go SDK's adapter arena.
pub const MARKER: &[u8] = b"wasmlet:adapter-arena:v1\0";
/// The arena's size in the Go SDK.
pub const ARENA_BYTES: u32 = 512 * 1024;

/// Returns `module` with a `cabi_realloc_adapter` export, or unchanged when it has no arena
/// (a module that is not from the Go SDK).
pub fn add_adapter_realloc(module: &[u8]) -> Result<Vec<u8>> {
    let Some(arena) = find_arena(module)? else {
        return Ok(module.to_vec());
    };
    // The bump pointer, then the allocations, 16-byte aligned.
    let bump = (arena + MARKER.len() as u32 + 3) & !3;
    let start = (bump + 4 + 15) & !15;
    let end = arena + ARENA_BYTES;

    let mut imported_funcs = 0u32;
    let mut defined_types: Vec<u32> = Vec::new();
    let mut realloc_func = None;
    let mut out = wasm_encoder::Module::new();
    let mut exports = ExportSection::new();
    let mut exports_seen = false;
    let mut pending_code: Option<CodeSection> = None;
    let mut code_count = 0u32;

    // First pass: the type of the Go module's cabi_realloc (same signature).
    for payload in Parser::new(0).parse_all(module) {
        if let Payload::ExportSection(reader) = payload? {
            for export in reader {
                let export = export?;
                if export.name == "cabi_realloc" && export.kind == ExternalKind::Func {
                    realloc_func = Some(export.index);
                }
            }
        }
    }
    let realloc_func = realloc_func.context("the module exports no cabi_realloc")?;

    for payload in Parser::new(0).parse_all(module) {
        let payload = payload?;
        match &payload {
            Payload::ImportSection(reader) => {
                for import in reader.clone().into_imports() {
                    if matches!(import?.ty, TypeRef::Func(_)) {
                        imported_funcs += 1;
                    }
                }
            }
            Payload::FunctionSection(reader) => {
                let mut functions = FunctionSection::new();
                for ty in reader.clone() {
                    let ty = ty?;
                    defined_types.push(ty);
                    functions.function(ty);
                }
                let go_realloc = realloc_func
                    .checked_sub(imported_funcs)
                    .and_then(|i| defined_types.get(i as usize))
                    .context("cabi_realloc is not a defined function")?;
                functions.function(*go_realloc);
                out.section(&functions);
                continue;
            }
            Payload::ExportSection(reader) => {
                for export in reader.clone() {
                    let export = export?;
                    let kind = match export.kind {
                        ExternalKind::Func | ExternalKind::FuncExact => ExportKind::Func,
                        ExternalKind::Table => ExportKind::Table,
                        ExternalKind::Memory => ExportKind::Memory,
                        ExternalKind::Global => ExportKind::Global,
                        ExternalKind::Tag => ExportKind::Tag,
                    };
                    exports.export(export.name, kind, export.index);
                }
                let index = imported_funcs + defined_types.len() as u32;
                exports.export("cabi_realloc_adapter", ExportKind::Func, index);
                out.section(&exports);
                exports_seen = true;
                continue;
            }
            Payload::CodeSectionStart { .. } => {
                pending_code = Some(CodeSection::new());
                continue;
            }
            Payload::CodeSectionEntry(body) => {
                if let Some(c) = pending_code.as_mut() {
                    c.raw(body.as_bytes());
                    code_count += 1;
                    if code_count as usize == defined_types.len() {
                        c.function(&bump_allocator(bump, start, end));
                        out.section(c);
                        pending_code = None;
                    }
                }
                continue;
            }
            _ => {}
        }
        if let Some((id, range)) = payload.as_section() {
            out.section(&RawSection {
                id,
                data: &module[range.start as usize..range.end as usize],
            });
        }
    }
    if !exports_seen || pending_code.is_some() {
        bail!("unexpected module layout: export or code section missing");
    }
    Ok(out.finish())
}

/// `cabi_realloc_adapter(old_ptr, old_size, align, new_size) -> ptr` over [start, end).
fn bump_allocator(bump: u32, start: u32, end: u32) -> Function {
    let mem = MemArg {
        offset: 0,
        align: 2,
        memory_index: 0,
    };
    let mut f = Function::new([(1, ValType::I32)]);
    let p = 4;
    for i in [
        // The adapter only ever allocates anew.
        Instruction::LocalGet(0),
        Instruction::If(wasm_encoder::BlockType::Empty),
        Instruction::Unreachable,
        Instruction::End,
        Instruction::I32Const(bump as i32),
        Instruction::I32Load(mem),
        Instruction::LocalTee(p),
        Instruction::I32Eqz,
        Instruction::If(wasm_encoder::BlockType::Empty),
        Instruction::I32Const(start as i32),
        Instruction::LocalSet(p),
        Instruction::End,
        // p = (p + align - 1) & -align
        Instruction::LocalGet(p),
        Instruction::LocalGet(2),
        Instruction::I32Add,
        Instruction::I32Const(1),
        Instruction::I32Sub,
        Instruction::I32Const(0),
        Instruction::LocalGet(2),
        Instruction::I32Sub,
        Instruction::I32And,
        Instruction::LocalSet(p),
        // Past the arena: trap.
        Instruction::LocalGet(p),
        Instruction::LocalGet(3),
        Instruction::I32Add,
        Instruction::I32Const(end as i32),
        Instruction::I32GtU,
        Instruction::If(wasm_encoder::BlockType::Empty),
        Instruction::Unreachable,
        Instruction::End,
        Instruction::I32Const(bump as i32),
        Instruction::LocalGet(p),
        Instruction::LocalGet(3),
        Instruction::I32Add,
        Instruction::I32Store(mem),
        Instruction::LocalGet(p),
        Instruction::End,
    ] {
        f.instruction(&i);
    }
    f
}

/// The address of the arena: the one place its marker appears in an active data segment.
fn find_arena(module: &[u8]) -> Result<Option<u32>> {
    let mut found = None;
    for payload in Parser::new(0).parse_all(module) {
        let Payload::DataSection(reader) = payload? else {
            continue;
        };
        for data in reader {
            let data = data?;
            let DataKind::Active { offset_expr, .. } = data.kind else {
                continue;
            };
            let Some(pos) = data.data.windows(MARKER.len()).position(|w| w == MARKER) else {
                continue;
            };
            let mut ops = offset_expr.get_operators_reader();
            let Operator::I32Const { value } = ops.read()? else {
                bail!("a data segment with the arena marker has a non-constant offset");
            };
            if found.is_some() {
                bail!("the adapter arena marker appears twice");
            }
            found = Some(value as u32 + pos as u32);
        }
    }
    Ok(found)
}
