//! Parameter lists of generated kernels (`"T x, float a"`) and the binding of type
//! placeholders to concrete types at call time.

use crate::array::dtype::DType;
use crate::error::{Error, Result};

/// A parameter's declared type: a concrete C++ type or a placeholder bound at call time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ParamType {
    Concrete(DType),
    Placeholder(String),
}

/// One parameter: `TYPE name`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Param {
    pub(crate) ty: ParamType,
    pub(crate) name: String,
}

/// Names generated code defines itself.
const RESERVED: [&str; 2] = ["i", "n"];

pub(crate) fn is_identifier(text: &str) -> bool {
    let mut chars = text.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Parses a comma-separated parameter list; an empty or blank list has no parameters.
pub(crate) fn parse_params(list: &str, what: &str) -> Result<Vec<Param>> {
    let mut params = Vec::new();
    if list.trim().is_empty() {
        return Ok(params);
    }
    for item in list.split(',') {
        let words: Vec<&str> = item.split_whitespace().collect();
        let bad = |why: &str| Error::InvalidValue(format!("{what} parameter `{}`: {why}", item.trim()));
        let Some((&name, type_words)) = words.split_last() else {
            return Err(bad("empty parameter"));
        };
        if type_words.is_empty() {
            return Err(bad("expected `TYPE name`"));
        }
        if type_words[0] == "raw" {
            return Err(bad("`raw` parameters are not supported"));
        }
        if !is_identifier(name) || name.starts_with('_') || RESERVED.contains(&name) {
            return Err(bad(
                "the name must be an identifier, not start with `_`, and not be `i` or `n`",
            ));
        }
        let type_text = type_words.join(" ");
        let ty = match DType::from_c_name(&type_text) {
            Some(dtype) => ParamType::Concrete(dtype),
            None if type_words.len() == 1 && is_identifier(&type_text) && !type_text.starts_with('_') => {
                ParamType::Placeholder(type_text)
            }
            None => return Err(bad("unknown type (a placeholder is one identifier such as `T`)")),
        };
        params.push(Param {
            ty,
            name: name.to_string(),
        });
    }
    Ok(params)
}

/// Fails unless every name in `lists` is distinct.
pub(crate) fn check_unique(lists: &[&[Param]]) -> Result<()> {
    let mut seen: Vec<&str> = Vec::new();
    for param in lists.iter().flat_map(|l| l.iter()) {
        if seen.contains(&param.name.as_str()) {
            return Err(Error::InvalidValue(format!(
                "parameter `{}` is declared twice",
                param.name
            )));
        }
        seen.push(&param.name);
    }
    Ok(())
}

/// Placeholders bound to types, in the order they were first bound.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Bindings {
    pub(crate) types: Vec<(String, DType)>,
}

impl Bindings {
    pub(crate) fn get(&self, placeholder: &str) -> Option<DType> {
        self.types.iter().find(|(p, _)| p == placeholder).map(|&(_, d)| d)
    }

    /// Binds `param`'s type to `given` (or checks it), for the kernel `kernel`.
    pub(crate) fn bind(&mut self, kernel: &str, param: &Param, given: DType) -> Result<()> {
        let expected = match &param.ty {
            ParamType::Concrete(dtype) => *dtype,
            ParamType::Placeholder(p) => match self.get(p) {
                Some(dtype) => dtype,
                None => {
                    self.types.push((p.clone(), given));
                    return Ok(());
                }
            },
        };
        if expected != given {
            return Err(Error::InvalidValue(format!(
                "kernel `{kernel}`: argument `{}` is {given}, the parameter needs {expected}{}",
                param.name,
                match &param.ty {
                    ParamType::Placeholder(p) => format!(" (`{p}` is already {expected})"),
                    ParamType::Concrete(_) => String::new(),
                }
            )));
        }
        Ok(())
    }

    /// The concrete type of `ty` (bound).
    pub(crate) fn resolve(&self, ty: &ParamType) -> Option<DType> {
        match ty {
            ParamType::Concrete(dtype) => Some(*dtype),
            ParamType::Placeholder(p) => self.get(p),
        }
    }

    /// `typedef float T;` lines for generated code.
    pub(crate) fn typedefs(&self) -> String {
        self.types
            .iter()
            .map(|(p, d)| format!("typedef {} {p};\n", d.c_name()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_parse_with_placeholders_and_concrete_types() {
        let params = parse_params("T x, unsigned  int count ,float a", "input").unwrap();
        assert_eq!(
            params,
            [
                Param {
                    ty: ParamType::Placeholder("T".into()),
                    name: "x".into()
                },
                Param {
                    ty: ParamType::Concrete(DType::U32),
                    name: "count".into()
                },
                Param {
                    ty: ParamType::Concrete(DType::F32),
                    name: "a".into()
                },
            ]
        );
        assert!(parse_params("  ", "input").unwrap().is_empty());
    }

    #[test]
    fn bad_parameters_are_errors() {
        for bad in ["x", "T x,", "T 1x", "T _x", "T i", "raw T x", "my type x", "T x-y"] {
            assert!(
                matches!(parse_params(bad, "input"), Err(Error::InvalidValue(_))),
                "{bad}"
            );
        }
        let a = parse_params("T x", "input").unwrap();
        let b = parse_params("T x", "output").unwrap();
        assert!(check_unique(&[&a, &b]).is_err());
        assert!(check_unique(&[&a]).is_ok());
    }

    #[test]
    fn placeholders_bind_once() {
        let params = parse_params("T x, T y, float a", "input").unwrap();
        let mut bindings = Bindings::default();
        bindings.bind("k", &params[0], DType::F64).unwrap();
        bindings.bind("k", &params[1], DType::F64).unwrap();
        let error = bindings.bind("k", &params[1], DType::F32).unwrap_err();
        assert!(error.to_string().contains("`T` is already float64"), "{error}");
        assert!(bindings.bind("k", &params[2], DType::F64).is_err());
        bindings.bind("k", &params[2], DType::F32).unwrap();
        assert_eq!(bindings.typedefs(), "typedef double T;\n");
    }
}
