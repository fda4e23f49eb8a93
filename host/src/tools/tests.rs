//! The host tools' specification: every argument schema is real JSON Schema (draft
//! 2020-12, checked by a validator against the meta-schema), and it agrees with the
//! tool's own argument parser on a valid call, an unknown field, a missing field and
//! a value of the wrong type.

use serde_json::{Value, json};

use super::*;
use crate::memory::NewMemory;

/// The tool's own reading of its arguments (what `run` does first).
fn parses(tool: &str, args: Value) -> Result<(), ToolError> {
    match tool {
        "fetch_url" => tool_args::<fetch::FetchArgs>(args).map(drop),
        "install_skill" => skills::read_args(args).map(drop),
        "read_skill_file" => tool_args::<files::ReadArgs>(args).map(drop),
        "save_memory" => tool_args::<NewMemory>(args).map(drop),
        "search_memory" => tool_args::<memory::SearchArgs>(args).map(drop),
        other => panic!("no parser for `{other}`: add it here"),
    }
}

/// A valid call, a call with a value of the wrong type, and one missing a required
/// field, of each tool.
fn calls(tool: &str) -> (Value, Value, Value) {
    match tool {
        "fetch_url" => (
            json!({"url": "https://example.org/page"}),
            json!({"url": 42}),
            json!({}),
        ),
        "install_skill" => (
            json!({"url": "https://example.org/notes/SKILL.md", "force": true}),
            json!({"skill_md": 42}),
            json!({"force": true}),
        ),
        "read_skill_file" => (
            json!({"path": "references/guide.md"}),
            json!({"path": ["references"]}),
            json!({}),
        ),
        "save_memory" => (
            json!({"type": "preference", "summary": "Likes green tea", "detail": null, "importance": 0.7}),
            json!({"type": "mood", "summary": "Likes green tea"}),
            json!({"type": "preference"}),
        ),
        "search_memory" => (
            json!({"q": "green tea", "limit": 5}),
            json!({"q": "green tea", "limit": "five"}),
            json!({"limit": 5}),
        ),
        other => panic!("no calls for `{other}`: add them here"),
    }
}

struct Validator {
    schemas: boon::Schemas,
    index: boon::SchemaIndex,
}

impl Validator {
    fn new(tool: &HostTool) -> Validator {
        let mut schemas = boon::Schemas::new();
        let mut compiler = boon::Compiler::new();
        compiler.set_default_draft(boon::Draft::V2020_12);
        let url = format!("urn:engram:tool:{}", tool.name);
        compiler
            .add_resource(&url, tool.args_schema())
            .unwrap_or_else(|e| panic!("{}: {e:#}", tool.name));
        // Compiling checks the schema against the draft's meta-schema.
        let index = compiler
            .compile(&url, &mut schemas)
            .unwrap_or_else(|e| panic!("{}: not a valid JSON Schema: {e:#}", tool.name));
        Validator { schemas, index }
    }

    fn accepts(&self, args: &Value) -> bool {
        self.schemas.validate(args, self.index).is_ok()
    }
}

#[test]
fn each_schema_is_json_schema_and_agrees_with_its_tool() {
    for tool in HOST_TOOLS {
        let name = tool.name;
        let schema = tool.args_schema();
        assert_eq!(schema["type"], "object", "{name}");
        assert_eq!(schema["additionalProperties"], false, "{name}");
        let validator = Validator::new(tool);
        let (valid, wrong_type, missing) = calls(name);

        assert!(validator.accepts(&valid), "{name}: schema refuses {valid}");
        parses(name, valid.clone()).unwrap_or_else(|e| panic!("{name}: tool refuses {valid}: {e}"));

        let mut unknown = valid.clone();
        unknown["nope"] = json!(1);
        assert!(
            !validator.accepts(&unknown),
            "{name}: schema takes {unknown}"
        );
        assert!(
            matches!(parses(name, unknown), Err(ToolError::UnknownArg { field }) if field == "args.nope"),
            "{name}"
        );

        for refused in [wrong_type, missing] {
            assert!(
                !validator.accepts(&refused),
                "{name}: schema takes {refused}"
            );
            assert!(
                matches!(
                    parses(name, refused.clone()),
                    Err(ToolError::InvalidArg { .. })
                ),
                "{name}: tool takes {refused}"
            );
        }
        // Arguments are an object, as `HostTools::call` insists.
        assert!(!validator.accepts(&json!([valid])), "{name}");
    }
}

#[test]
fn the_table_names_each_tool_once_and_describes_it_in_a_line() {
    assert!(HOST_TOOLS.windows(2).all(|w| w[0].name < w[1].name));
    for tool in HOST_TOOLS {
        assert_eq!(host_tool(tool.name).map(|t| t.name), Some(tool.name));
        assert!(
            !tool.description.is_empty()
                && tool.description.len() < 80
                && !tool.description.contains('\n'),
            "{}",
            tool.name
        );
    }
    assert!(host_tool("cd").is_none());
    assert!(host_tool("Fetch_URL").is_none());
    assert_eq!(
        names(),
        "fetch_url, install_skill, read_skill_file, save_memory, search_memory"
    );
}
