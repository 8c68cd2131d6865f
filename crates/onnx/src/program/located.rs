//! Errors that say where in the exported program they happened: the node's name, its
//! target, the call as the program wrote it (its "schema" as seen), the module it belongs
//! to and the user's stack trace.

use crate::OnnxError;
use ckpt_aten::program::Node;

/// How many stack-trace lines an error repeats (the user's frames come first).
const TRACE_LINES: usize = 6;

/// `node`'s call as the program records it: `conv2d(input: as_tensor, weight: as_tensor, …)`.
pub fn call_signature(node: &Node) -> String {
    let op = node
        .target
        .strip_prefix("torch.ops.")
        .unwrap_or(&node.target);
    let args: Vec<String> = node
        .inputs
        .iter()
        .map(|a| format!("{}: {}", a.name, a.arg.kind()))
        .collect();
    format!("{op}({})", args.join(", "))
}

/// The innermost module path from `nn_module_stack` (`layer1.0.conv1`), if any. Entries
/// are `key,path,class` joined by `;`.
pub fn module_path(node: &Node) -> Option<&str> {
    let last = node.meta("nn_module_stack")?.split(';').next_back()?;
    let path = last.split(',').nth(1)?;
    (!path.is_empty()).then_some(path)
}

/// The innermost module's class (`torch.nn.modules.conv.Conv2d`), if any.
fn module_class(node: &Node) -> Option<&str> {
    let last = node.meta("nn_module_stack")?.split(';').next_back()?;
    last.split(',').nth(2).filter(|c| !c.is_empty())
}

/// An error about `node` (index `index` in the program): `what`, then where it is.
pub fn at(node: &Node, index: usize, what: impl std::fmt::Display) -> OnnxError {
    at_with_hint(node, index, what, None)
}

/// Like [`at`], with a `hint` line after the location (what would work instead).
pub fn at_with_hint(
    node: &Node,
    index: usize,
    what: impl std::fmt::Display,
    hint: Option<&str>,
) -> OnnxError {
    let mut text = format!(
        "node `{}` (#{index}, {}): {what}\n  call: {}",
        node.label(),
        node.target,
        call_signature(node)
    );
    match (module_path(node), module_class(node)) {
        (Some(path), Some(class)) => text.push_str(&format!("\n  module: {path} ({class})")),
        (Some(path), None) => text.push_str(&format!("\n  module: {path}")),
        _ => {}
    }
    if let Some(trace) = node.meta("stack_trace").filter(|t| !t.trim().is_empty()) {
        text.push_str("\n  stack trace:");
        for line in trace.lines().take(TRACE_LINES) {
            text.push_str(&format!("\n    {}", line.trim_end()));
        }
    }
    if let Some(hint) = hint {
        text.push_str(&format!("\n  {hint}"));
    }
    OnnxError::Program { what: text }
}

/// An error about the program as a whole (its inputs, outputs or signature).
pub fn program(what: impl Into<String>) -> OnnxError {
    OnnxError::Program { what: what.into() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_node_its_call_module_and_trace() {
        let node: Node = serde_json::from_str(
            r#"{"target": "torch.ops.aten.grid_sampler_3d.default", "name": "grid_sampler_3d",
                "inputs": [{"name": "input", "arg": {"as_tensor": {"name": "x"}}, "kind": 1},
                           {"name": "align_corners", "arg": {"as_bool": false}, "kind": 1}],
                "outputs": [{"as_tensor": {"name": "grid_sampler_3d"}}],
                "metadata": {"stack_trace": "File \"m.py\", line 3, in forward\n    F.grid_sample(x, g)",
                             "nn_module_stack": "L__self__,,m.Net;L__self__warp,warp,m.Warp"}}"#,
        )
        .unwrap();
        let text = at(&node, 7, "not supported").to_string();
        assert!(text.starts_with(
            "node `grid_sampler_3d` (#7, torch.ops.aten.grid_sampler_3d.default): not supported"
        ));
        assert!(text.contains(
            "call: aten.grid_sampler_3d.default(input: as_tensor, align_corners: as_bool)"
        ));
        assert!(text.contains("module: warp (m.Warp)"));
        assert!(text.contains("line 3, in forward"));
        assert_eq!(module_path(&node), Some("warp"));
    }
}
