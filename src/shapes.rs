//! The shapes file: which problems to tune (see README "Shapes file").
//!
//! A hand-written YAML file: `defaults` (optional) hold the settings every layer inherits,
//! `layers` list the weights (n = output features, k = input features) with optional
//! overrides. Each layer expands to one problem per (element type, A layout, L, sparsity, m):
//!
//! ```yaml
//! defaults:
//!   m: [256, 512]            # rows of A (tokens); a single number is fine too
//!   sparsity: ["8:32", 0.5]  # "N:M", or a fraction / "75%" with the window M below
//!   M: 32                    # window for fractional sparsities
//!   L: 32                    # vector length; a list, [32, 1], tunes each
//!   a_layout: [row, col]     # layout of A: row-major (default), column-major, or both
//!   dtype: f32               # element type: f32 (default), bf16, f16, or a list of them
//! layers:
//!   - { model: llama-7b, name: q_proj, n: 4096, k: 4096 }
//!   - { model: llama-7b, name: up_proj, n: 11008, k: 4096, m: [1, 16] }
//! ```
//!
//! Errors are one line naming the file, the line (and column when known) and the fault.

use crate::problem::{ALayout, Dtype, NmPattern, Problem};
use serde::{Deserialize, Deserializer};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::Path;

/// Every problem a shapes file asks for, in file order, without duplicates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeSet {
    pub entries: Vec<ShapeEntry>,
}

/// One problem and the layer it came from (the first layer, when several give it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeEntry {
    pub problem: Problem,
    pub model: Option<String>,
    pub layer: Option<String>,
}

impl ShapeSet {
    pub fn problems(&self) -> Vec<Problem> {
        self.entries.iter().map(|e| e.problem).collect()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Why a shapes file cannot be used. Displays as `file:line:column: message` (line and column
/// when known).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeError {
    /// The file (or the origin given to [`parse`]).
    pub origin: String,
    /// 1-based line, when the fault can be placed.
    pub line: Option<usize>,
    /// 1-based column, when known (syntax and type errors).
    pub column: Option<usize>,
    pub message: String,
}

impl fmt::Display for ShapeError {
    /// Always one line: control characters from the file (a layer named "a\nb", say) are
    /// written escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", OneLine(&self.origin))?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(column) = self.column {
                write!(f, ":{column}")?;
            }
        }
        write!(f, ": {}", OneLine(&self.message))
    }
}

/// Text with its control characters escaped (`\n`, `\u{1b}`, …).
struct OneLine<'a>(&'a str);

impl fmt::Display for OneLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            if c.is_control() {
                write!(f, "{}", c.escape_default())?;
            } else {
                write!(f, "{c}")?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for ShapeError {}

/// The largest shapes file read: far above any real one (`shapes/llama.yaml`, the paper's 400
/// problems, is under 2 KB), far below what would make parsing slow.
pub const MAX_FILE_BYTES: usize = 1 << 20;

/// The deepest nesting of flow collections (`[`, `{`) accepted: the format needs two (a list
/// of sparsities inside a layer's `{ … }`). YAML parsers spend time growing with the square of
/// the depth before they give up on a deep one.
pub const MAX_NESTING: usize = 16;

/// Read and parse a shapes file.
pub fn load(path: &Path) -> Result<ShapeSet, ShapeError> {
    load_with_layouts(path, None)
}

/// [`load`], with `layouts` (when given) replacing every layer's `a_layout`: what
/// `nmtune --a-layout` does.
pub fn load_with_layouts(path: &Path, layouts: Option<&[ALayout]>) -> Result<ShapeSet, ShapeError> {
    use std::io::Read;
    let origin = path.display().to_string();
    let unreadable = |e: std::io::Error| ShapeError {
        origin: origin.clone(),
        line: None,
        column: None,
        message: format!("cannot read shapes file: {e}"),
    };
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_FILE_BYTES as u64 + 1).read_to_end(&mut bytes))
        .map_err(unreadable)?;
    let text = String::from_utf8(bytes).map_err(|_| {
        unreadable(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        ))
    })?;
    parse_with_layouts(&text, &origin, layouts)
}

/// Parse shapes-file text; `origin` names it in errors.
pub fn parse(text: &str, origin: &str) -> Result<ShapeSet, ShapeError> {
    parse_with_layouts(text, origin, None)
}

/// [`parse`], with `layouts` (when given) replacing every layer's `a_layout`.
pub fn parse_with_layouts(
    text: &str,
    origin: &str,
    layouts: Option<&[ALayout]>,
) -> Result<ShapeSet, ShapeError> {
    if layouts.is_some_and(|l| l.is_empty()) {
        return Err(ShapeError {
            origin: origin.to_string(),
            line: None,
            column: None,
            message: "the a_layout override is an empty list".into(),
        });
    }
    check_size_and_nesting(text, origin)?;
    let lines = LineIndex::scan(text);
    let at = |line: Option<usize>, message: String| ShapeError {
        origin: origin.to_string(),
        line,
        column: None,
        message,
    };
    if lines.is_blank {
        return Err(at(
            None,
            "the file is empty: expected 'layers:' with at least one layer".into(),
        ));
    }
    let raw: RawFile = serde_yaml::from_str(text).map_err(|e| syntax_error(origin, &e))?;
    let defaults = raw.defaults.unwrap_or_default();
    check_defaults(&defaults).map_err(|(key, message)| {
        at(lines.default_key_line(key), format!("defaults: {message}"))
    })?;
    let layers = raw.layers.unwrap_or_default();
    if layers.is_empty() {
        return Err(at(
            lines.layers,
            "no layers: list at least one under 'layers:'".into(),
        ));
    }
    let mut set = ShapeSet {
        entries: Vec::new(),
    };
    let mut seen = HashSet::new();
    for (index, layer) in layers.iter().enumerate() {
        let problems = expand_layer(layer, &defaults, layouts).map_err(|message| {
            at(
                lines.layer_line(index, layers.len()),
                format!("{}: {message}", layer.label(index)),
            )
        })?;
        for problem in problems {
            if seen.insert(problem) {
                set.entries.push(ShapeEntry {
                    problem,
                    model: layer.model.clone(),
                    layer: layer.name.clone(),
                });
            }
        }
    }
    Ok(set)
}

/// Refuse, at once, text larger than [`MAX_FILE_BYTES`] or nested deeper than [`MAX_NESTING`]
/// flow collections (counted outside quotes and comments), naming where the limit is passed.
fn check_size_and_nesting(text: &str, origin: &str) -> Result<(), ShapeError> {
    let refuse = |line: Option<usize>, column: Option<usize>, message: String| ShapeError {
        origin: origin.to_string(),
        line,
        column,
        message,
    };
    if text.len() > MAX_FILE_BYTES {
        return Err(refuse(
            None,
            None,
            format!("the file is larger than {MAX_FILE_BYTES} bytes, far more than any shapes file needs"),
        ));
    }
    let (mut depth, mut quote, mut comment) = (0usize, None::<char>, false);
    let (mut line, mut column, mut previous) = (1usize, 0usize, '\n');
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        column += 1;
        match (quote, c) {
            (_, '\n') => {
                (line, column, comment) = (line + 1, 0, false);
                // A quoted scalar may span lines; a comment never does.
            }
            (_, _) if comment => {}
            (Some('"'), '\\') => {
                chars.next();
                column += 1;
            }
            (Some(q), c) if c == q => {
                // '' inside single quotes is a quote, not the end.
                if q == '\'' && chars.peek() == Some(&'\'') {
                    chars.next();
                    column += 1;
                } else {
                    quote = None;
                }
            }
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '#') if previous.is_whitespace() => comment = true,
            (None, '[' | '{') => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Err(refuse(
                        Some(line),
                        Some(column),
                        format!("lists or maps nested deeper than {MAX_NESTING} levels: a shapes file needs two"),
                    ));
                }
            }
            (None, ']' | '}') => depth = depth.saturating_sub(1),
            _ => {}
        }
        previous = c;
    }
    Ok(())
}

/// A serde_yaml error as one line, with its location moved into the structured fields.
fn syntax_error(origin: &str, error: &serde_yaml::Error) -> ShapeError {
    let location = error.location();
    let mut message = error.to_string();
    if let Some(loc) = &location {
        message = message.replacen(
            &format!(" at line {} column {}", loc.line(), loc.column()),
            "",
            1,
        );
    }
    ShapeError {
        origin: origin.to_string(),
        line: location.as_ref().map(|l| l.line()),
        column: location.as_ref().map(|l| l.column()),
        message: message.replace('\n', " "),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    defaults: Option<RawSettings>,
    layers: Option<Vec<RawLayer>>,
}

/// Settings a layer inherits from `defaults` unless it sets them itself.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawSettings {
    #[serde(default, deserialize_with = "one_or_many_sizes")]
    m: Option<Vec<usize>>,
    #[serde(default, deserialize_with = "one_or_many_sparsities")]
    sparsity: Option<Vec<String>>,
    #[serde(rename = "M")]
    window: Option<u32>,
    #[serde(rename = "L", default, deserialize_with = "one_or_many_lengths")]
    l: Option<Vec<usize>>,
    #[serde(default, deserialize_with = "one_or_many_layouts")]
    a_layout: Option<Vec<ALayout>>,
    #[serde(default, deserialize_with = "one_or_many_dtypes")]
    dtype: Option<Vec<Dtype>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLayer {
    model: Option<String>,
    name: Option<String>,
    n: usize,
    k: usize,
    #[serde(default, deserialize_with = "one_or_many_sizes")]
    m: Option<Vec<usize>>,
    #[serde(default, deserialize_with = "one_or_many_sparsities")]
    sparsity: Option<Vec<String>>,
    #[serde(rename = "M")]
    window: Option<u32>,
    #[serde(rename = "L", default, deserialize_with = "one_or_many_lengths")]
    l: Option<Vec<usize>>,
    #[serde(default, deserialize_with = "one_or_many_layouts")]
    a_layout: Option<Vec<ALayout>>,
    #[serde(default, deserialize_with = "one_or_many_dtypes")]
    dtype: Option<Vec<Dtype>>,
}

impl RawLayer {
    /// How errors name the layer: `layer 'up_proj' (llama-7b)`, or by position.
    fn label(&self, index: usize) -> String {
        let name = match &self.name {
            Some(name) => format!("layer '{name}'"),
            None => format!("layer #{}", index + 1),
        };
        match &self.model {
            Some(model) => format!("{name} ({model})"),
            None => name,
        }
    }
}

/// `m: 256` or `m: [256, 512]`. Read through a `Value` so that YAML syntax errors inside the
/// value surface as themselves, not as a type error.
fn one_or_many_sizes<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<usize>>, D::Error> {
    one_or_many_numbers(d, "m must be a positive integer or a list of them")
}

/// `L: 32` or `L: [32, 1]`.
fn one_or_many_lengths<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<usize>>, D::Error> {
    one_or_many_numbers(d, "L must be a positive integer or a list of them")
}

fn one_or_many_numbers<'de, D: Deserializer<'de>>(
    d: D,
    message: &'static str,
) -> Result<Option<Vec<usize>>, D::Error> {
    let size = |value: &serde_yaml::Value| value.as_u64().and_then(|m| usize::try_from(m).ok());
    let bad = || serde::de::Error::custom(message);
    match serde_yaml::Value::deserialize(d)? {
        serde_yaml::Value::Sequence(items) => items
            .iter()
            .map(|v| size(v).ok_or_else(bad))
            .collect::<Result<_, _>>()
            .map(Some),
        single => size(&single).map(|m| Some(vec![m])).ok_or_else(bad),
    }
}

/// `sparsity: "8:32"`, `sparsity: 0.75` or a list of such items, each kept as text.
fn one_or_many_sparsities<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Vec<String>>, D::Error> {
    let item_text = |value: &serde_yaml::Value| match value {
        serde_yaml::Value::String(s) => Some(s.clone()),
        serde_yaml::Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    let bad = || {
        serde::de::Error::custom("sparsity must be \"N:M\", a fraction, \"75%\", or a list of them")
    };
    match serde_yaml::Value::deserialize(d)? {
        serde_yaml::Value::Sequence(items) => items
            .iter()
            .map(|v| item_text(v).ok_or_else(bad))
            .collect::<Result<_, _>>()
            .map(Some),
        single => item_text(&single).map(|s| Some(vec![s])).ok_or_else(bad),
    }
}

/// `a_layout: row`, `a_layout: col` or a list of them.
fn one_or_many_layouts<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<ALayout>>, D::Error> {
    one_or_many_names(d, "a_layout", "row, col", ALayout::parse)
}

/// `dtype: f32`, `dtype: bf16`, `dtype: f16` or a list of them.
fn one_or_many_dtypes<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Dtype>>, D::Error> {
    one_or_many_names(d, "dtype", "f32, bf16, f16", Dtype::parse)
}

/// A key whose value is one of a few names (`choices`, as the message lists them) or a
/// non-empty list of them.
fn one_or_many_names<'de, D: Deserializer<'de>, T>(
    d: D,
    key: &str,
    choices: &str,
    parse: fn(&str) -> Option<T>,
) -> Result<Option<Vec<T>>, D::Error> {
    let item = |value: &serde_yaml::Value| value.as_str().and_then(parse);
    let bad = || serde::de::Error::custom(format!("{key} must be {choices}, or a list of them"));
    let items: Vec<T> = match serde_yaml::Value::deserialize(d)? {
        serde_yaml::Value::Sequence(items) => items
            .iter()
            .map(|v| item(v).ok_or_else(bad))
            .collect::<Result<_, _>>()?,
        single => vec![item(&single).ok_or_else(bad)?],
    };
    if items.is_empty() {
        return Err(serde::de::Error::custom(format!("{key} list is empty")));
    }
    Ok(Some(items))
}

/// Faults in `defaults` that do not depend on any layer: (key, message).
fn check_defaults(defaults: &RawSettings) -> Result<(), (&'static str, String)> {
    if let Some(ms) = &defaults.m {
        check_m_list(ms).map_err(|e| ("m", e))?;
    }
    if let Some(sparsities) = &defaults.sparsity {
        if sparsities.is_empty() {
            return Err(("sparsity", "sparsity list is empty".into()));
        }
        for text in sparsities {
            // Fractions need the window, which a layer may still set; check them there.
            if text.contains(':') || defaults.window.is_some() {
                parse_sparsity(text, defaults.window).map_err(|e| ("sparsity", e))?;
            }
        }
    }
    if let Some(ls) = &defaults.l {
        check_l_list(ls).map_err(|e| ("L", e))?;
    }
    Ok(())
}

fn check_l_list(ls: &[usize]) -> Result<(), String> {
    if ls.is_empty() {
        return Err("L list is empty".into());
    }
    match ls.iter().find(|&&l| l == 0 || l > 128) {
        Some(l) => Err(format!("vector length L={l} must be between 1 and 128")),
        None => Ok(()),
    }
}

fn check_m_list(ms: &[usize]) -> Result<(), String> {
    if ms.is_empty() {
        return Err("m list is empty".into());
    }
    if ms.contains(&0) {
        return Err("m must be at least 1".into());
    }
    Ok(())
}

fn parse_sparsity(text: &str, window: Option<u32>) -> Result<NmPattern, String> {
    if text.contains(':') {
        return NmPattern::parse(text, 0).map_err(|e| e.to_string());
    }
    let window = window.ok_or_else(|| {
        format!("sparsity '{text}' is a fraction: set the window M (in the layer or in defaults)")
    })?;
    NmPattern::parse(text, window).map_err(|e| e.to_string())
}

/// The problems of one layer: every element type × A layout × sparsity × m, with overrides
/// applied (the caller's `layouts` over the layer's over the defaults').
fn expand_layer(
    layer: &RawLayer,
    defaults: &RawSettings,
    layouts: Option<&[ALayout]>,
) -> Result<Vec<Problem>, String> {
    let ms = layer
        .m
        .as_ref()
        .or(defaults.m.as_ref())
        .ok_or("no m given: set m in the layer or in defaults")?;
    check_m_list(ms)?;
    let sparsities = layer
        .sparsity
        .as_ref()
        .or(defaults.sparsity.as_ref())
        .ok_or("no sparsity given: set sparsity in the layer or in defaults")?;
    if sparsities.is_empty() {
        return Err("sparsity list is empty".into());
    }
    let window = layer.window.or(defaults.window);
    let ls = layer
        .l
        .as_ref()
        .or(defaults.l.as_ref())
        .ok_or("no vector length given: set L in the layer or in defaults")?;
    check_l_list(ls)?;
    let overridden = layouts.is_some();
    let layouts = layouts
        .or(layer.a_layout.as_deref())
        .or(defaults.a_layout.as_deref())
        .unwrap_or(&[ALayout::RowMajor]);
    let dtypes = layer
        .dtype
        .as_deref()
        .or(defaults.dtype.as_deref())
        .unwrap_or(&[Dtype::F32]);
    let count = dtypes.len() * layouts.len() * ls.len() * ms.len() * sparsities.len();
    let mut problems = Vec::with_capacity(count);
    for &dtype in dtypes {
        for &layout in layouts {
            for &l in ls {
                for text in sparsities {
                    let nm = parse_sparsity(text, window)?;
                    for &m in ms {
                        let problem =
                            Problem::new(m, layer.n, layer.k, nm, l).map_err(|e| e.to_string())?;
                        let problem = problem.with_layout(layout).map_err(|e| {
                            let given = if overridden { " (--a-layout)" } else { "" };
                            format!("shape {problem} with a_layout {layout}{given}: {e}")
                        })?;
                        problems.push(problem.with_dtype(dtype));
                    }
                }
            }
        }
    }
    Ok(problems)
}

/// Where things start in the text, found by a line scan (serde_yaml gives no spans for values):
/// top-level `defaults:` and its keys, `layers:` and the `-` line of each block-style item.
#[derive(Default)]
struct LineIndex {
    is_blank: bool,
    defaults: Option<usize>,
    default_keys: HashMap<String, usize>,
    layers: Option<usize>,
    layer_items: Vec<usize>,
}

impl LineIndex {
    fn scan(text: &str) -> Self {
        let mut index = LineIndex {
            is_blank: true,
            ..Default::default()
        };
        let mut section = "";
        let mut item_indent: Option<usize> = None;
        for (number, line) in text.lines().enumerate().map(|(i, l)| (i + 1, l)) {
            let content = line.trim_start();
            if content.is_empty() || content.starts_with('#') {
                continue;
            }
            index.is_blank = false;
            let indent = line.len() - content.len();
            let is_item = content == "-" || content.starts_with("- ");
            if indent == 0 && !is_item {
                section = index.top_level_key(content, number);
                continue;
            }
            match section {
                "layers" if is_item && *item_indent.get_or_insert(indent) == indent => {
                    index.layer_items.push(number)
                }
                "defaults" => {
                    if let Some((key, _)) = content.split_once(':') {
                        index
                            .default_keys
                            .entry(key.trim().to_string())
                            .or_insert(number);
                    }
                }
                _ => {}
            }
        }
        index
    }

    /// Record a top-level key's line; return the section it opens.
    fn top_level_key(&mut self, content: &str, number: usize) -> &'static str {
        let key = content.split(':').next().unwrap_or("").trim();
        match key {
            "defaults" => {
                self.defaults.get_or_insert(number);
                "defaults"
            }
            "layers" => {
                self.layers.get_or_insert(number);
                "layers"
            }
            _ => "",
        }
    }

    /// The line of layer `index`, or the `layers:` line when the scan could not match items
    /// to layers (flow style).
    fn layer_line(&self, index: usize, layer_count: usize) -> Option<usize> {
        if self.layer_items.len() == layer_count {
            Some(self.layer_items[index])
        } else {
            self.layers
        }
    }

    fn default_key_line(&self, key: &str) -> Option<usize> {
        self.default_keys.get(key).copied().or(self.defaults)
    }
}
