//! Which tensors of a checkpoint are linear weights: the ones `nmtune prune` compresses and
//! `nmtune shapes --from` lists.

use super::CheckpointError;
use regex::Regex;

/// The default rule's name ending: PyTorch names a layer's weight `<layer>.weight`.
const WEIGHT_SUFFIX: &str = ".weight";

/// Words (any case) that mark a 2-D `.weight` as something other than a linear layer that
/// pruning should touch: token and position embeddings (`embed_tokens`, `word_embeddings`,
/// `embed_out`), normalisation scales stored 2-D, and the output head, which ties to the
/// embedding in many models and is accuracy-critical.
const NOT_LINEAR: [&str; 3] = ["embed", "norm", "lm_head"];

/// The tensors a command works on.
#[derive(Debug, Clone)]
pub enum Selection {
    /// Every 2-D tensor whose name ends in `.weight` and contains none of `embed`, `norm`,
    /// `lm_head` (any case). Tensors of other shapes are simply not selected.
    Linear,
    /// Every tensor whose name the regular expression matches (anywhere in the name, as
    /// Python's `re.search`; anchor with `^…$`). A selected tensor that is not a 2-D float
    /// weight is an error, not skipped: the user asked for it by name.
    Matching(Regex),
}

impl Selection {
    /// The selection of `--layers PATTERN`; a pattern that does not compile is a one-line error.
    pub fn matching(pattern: &str) -> Result<Self, CheckpointError> {
        Regex::new(pattern)
            .map(Selection::Matching)
            .map_err(|e| CheckpointError::BadSelection {
                pattern: pattern.to_string(),
                reason: one_line_reason(&e),
            })
    }

    /// Whether the tensor `name` of shape `shape` is selected.
    pub fn selects(&self, name: &str, shape: &[usize]) -> bool {
        match self {
            Selection::Linear => {
                let lower = name.to_lowercase();
                shape.len() == 2
                    && name.ends_with(WEIGHT_SUFFIX)
                    && !NOT_LINEAR.iter().any(|word| lower.contains(word))
            }
            Selection::Matching(regex) => regex.is_match(name),
        }
    }

    /// The rule in words, for the error that nothing matched.
    pub fn describe(&self) -> String {
        match self {
            Selection::Linear => format!(
                "the default rule (2-D, name ending in '{WEIGHT_SUFFIX}', without {})",
                NOT_LINEAR.join(", ")
            ),
            Selection::Matching(regex) => format!("the regular expression '{}'", regex.as_str()),
        }
    }
}

/// regex's syntax errors span several lines (the pattern, a caret, the reason); keep the
/// reason, which is the line that starts with `error:`.
fn one_line_reason(error: &regex::Error) -> String {
    let text = error.to_string();
    text.lines()
        .find_map(|line| line.trim().strip_prefix("error: "))
        .unwrap_or_else(|| text.lines().last().unwrap_or("invalid pattern"))
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_rule_takes_linear_weights_only() {
        let linear = Selection::Linear;
        assert!(linear.selects("model.layers.0.mlp.up_proj.weight", &[11008, 4096]));
        assert!(linear.selects("model.layers.0.self_attn.q_proj.weight", &[4096, 4096]));
        assert!(!linear.selects("model.layers.0.input_layernorm.weight", &[4096]));
        assert!(!linear.selects("model.layers.0.LayerNorm.weight", &[4, 4096]));
        assert!(!linear.selects("model.embed_tokens.weight", &[32000, 4096]));
        assert!(!linear.selects("lm_head.weight", &[32000, 4096]));
        assert!(!linear.selects("model.layers.0.mlp.up_proj.bias", &[11008, 1]));
        assert!(!linear.selects("model.layers.0.conv.weight", &[8, 4, 3, 3]));
    }

    #[test]
    fn a_regex_selects_by_name_alone() {
        let mlp = Selection::matching(r"mlp\.").unwrap();
        assert!(mlp.selects("model.layers.0.mlp.up_proj.weight", &[11008, 4096]));
        assert!(mlp.selects("model.layers.0.mlp.norm", &[4096]));
        assert!(!mlp.selects("model.layers.0.self_attn.q_proj.weight", &[4096, 4096]));
    }

    #[test]
    fn a_bad_regex_is_one_line() {
        let err = Selection::matching("mlp.(").unwrap_err().to_string();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("unclosed group"), "{err}");
        assert!(err.contains("'mlp.('"), "{err}");
    }
}
