//! `cargo xtask bindgen`: turns the pinned CUDA headers into
//! `cuda-sys/src/generated/*.rs`.
//!
//! bindgen writes the types; its function declarations are then rewritten
//! into one accessor method per function on the library's table type
//! (`crate::Driver`, ...), which resolves the symbol lazily on first use.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use cuda_sys::{Library, LIBRARIES};

use crate::wheels;

/// Every library of `cuda_sys::LIBRARIES`, each from its row's header, allowlists and wheels;
/// the include folders are those of every row's wheels, in table order. `--only MODULE`
/// generates one row's module from its own wheels (a header that includes nothing from the
/// other rows' wheels, such as `nvml.h`), without fetching the others.
pub fn run(root: &Path, args: &[String]) -> Result<(), String> {
    let only = match args {
        [] => None,
        [flag, module] if flag == "--only" => Some(
            LIBRARIES
                .iter()
                .find(|library| library.module == module)
                .ok_or_else(|| format!("no library row has the module {module:?}"))?,
        ),
        other => return Err(format!("bindgen takes no arguments or `--only MODULE`, not {other:?}")),
    };
    let pins = wheels::pins(root)?;
    let mut includes = Vec::new();
    let wheel_names = match only {
        Some(library) => library.bindings.wheels.to_vec(),
        None => include_wheels(),
    };
    for name in wheel_names {
        includes.push(wheels::include(&wheels::ensure(root, wheels::pin(&pins, name)?)?));
    }
    let out_dir = root.join("cuda-sys/src");
    for library in LIBRARIES
        .iter()
        .filter(|library| only.map_or(true, |only| only == *library))
    {
        let bindings = &library.bindings;
        let pin = wheels::pin(&pins, bindings.wheels[0])?;
        let header = includes
            .iter()
            .map(|dir| dir.join(bindings.header))
            .find(|path| path.exists())
            .ok_or_else(|| format!("{} is in none of the wheels' include folders", bindings.header))?;
        let code = generate(library, pin, &header, &includes)?;
        let path = out_dir.join(library.generated);
        std::fs::write(&path, code).map_err(|e| format!("{}: {e}", path.display()))?;
        eprintln!("xtask: wrote {}", path.display());
    }
    Ok(())
}

/// The wheels whose `include` folders every header is generated with: each row's, in table
/// order, each once.
fn include_wheels() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    for name in LIBRARIES.iter().flat_map(|library| library.bindings.wheels) {
        if !names.contains(name) {
            names.push(name);
        }
    }
    names
}

fn generate(library: &Library, pin: &wheels::Pin, header: &Path, includes: &[PathBuf]) -> Result<String, String> {
    let api = &library.bindings;
    let source = std::fs::read(header).map_err(|e| format!("{}: {e}", header.display()))?;
    let builder = builder(header, includes, api.defines)
        .allowlist_function(api.functions)
        .allowlist_type(api.types)
        .allowlist_var(api.vars);
    let file = run_bindgen(builder, api.header)?;

    let aliases = macro_aliases(&String::from_utf8_lossy(&source));
    let mut kept = Vec::new();
    let mut functions = Vec::new();
    for item in file.items {
        match item {
            syn::Item::ForeignMod(block) => {
                for foreign in block.items {
                    if let syn::ForeignItem::Fn(function) = foreign {
                        functions.push(function);
                    }
                }
            }
            other => kept.push(other),
        }
    }
    functions.sort_by_key(|f| f.sig.ident.to_string());
    let proc_versions = if library.proc_address {
        let typedefs = header.with_file_name("cudaTypedefs.h");
        proc_versions(&typedefs, includes, &kept, &functions, &aliases)?
    } else {
        BTreeMap::new()
    };

    let table = format_ident!("{}", library.table);
    let mut names = Vec::new();
    let mut accessors = Vec::new();
    for (index, function) in functions.iter().enumerate() {
        let symbol = function.sig.ident.to_string();
        let method_name = method_name(&symbol);
        let proc_name = aliases.get(&symbol).cloned().unwrap_or_else(|| method_name.clone());
        let proc_version = proc_versions.get(&symbol).copied().unwrap_or(0);
        names.push(
            quote! { crate::FunctionName { symbol: #symbol, proc_name: #proc_name, proc_version: #proc_version } },
        );
        accessors.push(accessor(index, &symbol, &method_name, &function.sig));
    }
    let count = functions.len();
    let table_doc = format!(
        " Every function `{}` declares, in the order of the table's symbol slots.",
        api.header
    );
    let header_name = api.header;
    let wheel = &pin.name;
    let version = &pin.version;
    let hash = fnv1a64(&source);
    let generated = quote! {
        #(#kept)*

        /// The header these bindings were generated from.
        pub const HEADER: crate::HeaderStamp = crate::HeaderStamp {
            wheel: #wheel,
            version: #version,
            header: #header_name,
            fnv1a64: #hash,
        };

        #[doc = #table_doc]
        pub static FUNCTIONS: [crate::FunctionName; #count] = [#(#names),*];

        impl crate::#table {
            #(#accessors)*
        }
    };
    let file: syn::File = syn::parse2(generated).map_err(|e| format!("re-parsing generated code: {e}"))?;
    // The SAFETY notes travel through the token stream as doc attributes;
    // in the written file they are plain comments.
    let body = prettyplease::unparse(&file).replace("/// SAFETY: slot", "// SAFETY: slot");
    Ok(format!(
        "// @generated by `cargo xtask bindgen` from {header_name} in {wheel}=={version}. Do not edit.\n\
         #![allow(non_camel_case_types, non_snake_case, non_upper_case_globals, dead_code)]\n\
         #![allow(unpredictable_function_pointer_comparisons, clippy::all)]\n\n{body}"
    ))
}

/// One accessor: resolves the symbol in slot `index` and returns it as the
/// function pointer type the header declares.
fn accessor(index: usize, symbol: &str, method: &str, sig: &syn::Signature) -> TokenStream {
    let method = format_ident!("{}", method);
    let inputs = &sig.inputs;
    let output = &sig.output;
    let doc = format!(" `{symbol}`, resolved on first use.");
    let safety = format!(
        " SAFETY: slot {index} only ever holds the address of `{symbol}`, which the pinned header declares with this signature."
    );
    quote! {
        #[doc = #doc]
        #[inline]
        pub fn #method(&self) -> ::core::result::Result<unsafe extern "C" fn(#inputs) #output, crate::SymbolError> {
            let address = self.symbols.address(#index)?;
            #[doc = #safety]
            let function = unsafe {
                ::core::mem::transmute::<*mut ::core::ffi::c_void, unsafe extern "C" fn(#inputs) #output>(address)
            };
            Ok(function)
        }
    }
}

/// The public method name of a symbol: nvJitLink's `__nvJitLinkCreate_13_0`
/// becomes `nvJitLinkCreate`; every other symbol keeps its exported name.
fn method_name(symbol: &str) -> String {
    match symbol.strip_prefix("__") {
        Some(rest) => match rest.rfind("_13_") {
            Some(at) => rest[..at].to_string(),
            None => rest.to_string(),
        },
        None => symbol.to_string(),
    }
}

/// `#define cuMemAlloc cuMemAlloc_v2` (also through `__CUDA_API_PTSZ(...)`)
/// read backwards: exported symbol -> the name `cuGetProcAddress` knows it by.
/// Only version suffixes count: `cuGraphInstantiate` -> `cuGraphInstantiateWithFlags`
/// names another function, which `cuGetProcAddress` knows by its own name.
fn macro_aliases(header: &str) -> BTreeMap<String, String> {
    let mut aliases = BTreeMap::new();
    for line in header.lines() {
        let mut words = line.split_whitespace();
        if words.next() != Some("#define") {
            continue;
        }
        let (Some(name), Some(target)) = (words.next(), words.next()) else {
            continue;
        };
        let target = target
            .strip_prefix("__CUDA_API_PTDS(")
            .or_else(|| target.strip_prefix("__CUDA_API_PTSZ("))
            .map(|t| t.trim_end_matches(')'))
            .unwrap_or(target);
        let is_version_of_name = target
            .strip_prefix(name)
            .and_then(|suffix| suffix.strip_prefix("_v"))
            .is_some_and(|digits| !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()));
        if name.starts_with("cu") && is_version_of_name {
            aliases.entry(target.to_string()).or_insert_with(|| name.to_string());
        }
    }
    aliases
}

/// FNV-1a, 64 bit: the header fingerprint stamped into the generated files.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn builder(header: &Path, includes: &[PathBuf], defines: &[&str]) -> bindgen::Builder {
    let mut builder = bindgen::Builder::default()
        .header(header.to_string_lossy())
        .default_enum_style(bindgen::EnumVariation::NewType {
            is_bitfield: false,
            is_global: false,
        })
        .derive_default(true)
        .derive_eq(true)
        .derive_hash(true)
        .generate_comments(false)
        .layout_tests(false)
        .merge_extern_blocks(true)
        .sort_semantically(true);
    for dir in includes {
        builder = builder.clang_arg(format!("-I{}", dir.display()));
    }
    for define in defines {
        builder = builder.clang_arg(format!("-D{define}"));
    }
    builder
}

fn run_bindgen(builder: bindgen::Builder, what: &str) -> Result<syn::File, String> {
    let bindings = builder.generate().map_err(|e| format!("bindgen on {what}: {e}"))?;
    syn::parse_file(&bindings.to_string()).map_err(|e| format!("parsing bindgen output for {what}: {e}"))
}

/// The `cuGetProcAddress` version of each driver function: the newest
/// `PFN_<name>_v<version>` in `cudaTypedefs.h` whose signature is the one
/// `cuda.h` declares. The headers' `CUDA_VERSION` is not enough: `cuda.h`
/// 13.0 declares `cuCtxSynchronize(void)` (version 2000) while asking for
/// version 13000 returns `cuCtxSynchronize(CUcontext)`.
fn proc_versions(
    typedefs: &Path,
    includes: &[PathBuf],
    driver_items: &[syn::Item],
    functions: &[syn::ForeignItemFn],
    aliases: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, i32>, String> {
    let file = run_bindgen(
        builder(typedefs, includes, &[]).allowlist_type("^PFN_cu.*"),
        "cudaTypedefs.h",
    )?;
    let mut type_aliases = BTreeMap::new();
    for item in driver_items.iter().chain(&file.items) {
        if let syn::Item::Type(alias) = item {
            type_aliases.insert(alias.ident.to_string(), (*alias.ty).clone());
        }
    }
    // (name, canonical signature) -> newest version
    let mut versions: BTreeMap<(String, String), i32> = BTreeMap::new();
    for item in &file.items {
        let syn::Item::Type(alias) = item else { continue };
        let name = alias.ident.to_string();
        let Some(rest) = name.strip_prefix("PFN_") else {
            continue;
        };
        let Some((base, version)) = rest.rsplit_once("_v") else {
            continue;
        };
        let Ok(version) = version.parse::<i32>() else { continue }; // `_ptsz`/`_ptds` variants end otherwise
        let Some(function) = bare_fn_in(&alias.ty) else {
            continue;
        };
        let key = (
            base.to_string(),
            signature(function.inputs.iter().map(|a| &a.ty), &function.output, &type_aliases),
        );
        let newest = versions.entry(key).or_insert(version);
        *newest = (*newest).max(version);
    }
    let mut found = BTreeMap::new();
    for function in functions {
        let symbol = function.sig.ident.to_string();
        let base = aliases.get(&symbol).cloned().unwrap_or_else(|| symbol.clone());
        let inputs = function.sig.inputs.iter().filter_map(|a| match a {
            syn::FnArg::Typed(typed) => Some(&*typed.ty),
            syn::FnArg::Receiver(_) => None,
        });
        let key = (base, signature(inputs, &function.sig.output, &type_aliases));
        if let Some(version) = versions.get(&key) {
            found.insert(symbol, *version);
        }
    }
    Ok(found)
}

/// `Option<unsafe extern "C" fn(..)>` -> the `fn(..)`.
fn bare_fn_in(ty: &syn::Type) -> Option<&syn::TypeBareFn> {
    let syn::Type::Path(path) = ty else { return None };
    let segment = path.path.segments.last()?;
    let syn::PathArguments::AngleBracketed(args) = &segment.arguments else {
        return None;
    };
    match args.args.first()? {
        syn::GenericArgument::Type(syn::Type::BareFn(function)) => Some(function),
        _ => None,
    }
}

/// A signature with every type alias expanded, as text, for comparison.
fn signature<'a>(
    inputs: impl Iterator<Item = &'a syn::Type>,
    output: &syn::ReturnType,
    type_aliases: &BTreeMap<String, syn::Type>,
) -> String {
    let mut text = String::new();
    for input in inputs {
        text.push_str(&canonical(input, type_aliases, 0));
        text.push(',');
    }
    if let syn::ReturnType::Type(_, ty) = output {
        text.push_str("->");
        text.push_str(&canonical(ty, type_aliases, 0));
    }
    text
}

fn canonical(ty: &syn::Type, type_aliases: &BTreeMap<String, syn::Type>, depth: usize) -> String {
    match ty {
        syn::Type::Ptr(pointer) => {
            let mutability = if pointer.mutability.is_some() {
                "*mut "
            } else {
                "*const "
            };
            format!("{mutability}{}", canonical(&pointer.elem, type_aliases, depth))
        }
        syn::Type::Path(path) if path.qself.is_none() && path.path.segments.len() == 1 && depth < 16 => {
            let name = path.path.segments[0].ident.to_string();
            match type_aliases.get(&name) {
                Some(target) => canonical(target, type_aliases, depth + 1),
                None => name,
            }
        }
        other => quote!(#other).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The include folders, and so clang's `-I` arguments, in the order the committed
    /// bindings were generated with.
    #[test]
    fn include_folders_keep_their_order() {
        assert_eq!(
            include_wheels(),
            [
                "nvidia-cuda-runtime",
                "nvidia-cuda-crt",
                "nvidia-cuda-nvrtc",
                "nvidia-nvjitlink",
                "nvidia-cublas",
                "nvidia-nccl-cu13",
                "nvidia-cufft",
                "nvidia-cusolver",
                "nvidia-nvml-dev"
            ]
        );
    }

    #[test]
    fn method_names_drop_the_version_suffix() {
        assert_eq!(method_name("__nvJitLinkCreate_13_0"), "nvJitLinkCreate");
        assert_eq!(method_name("cuMemAlloc_v2"), "cuMemAlloc_v2");
    }
}
