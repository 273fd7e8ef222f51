//! The JSON Schema of the plan (`docs/plan.schema.json`), generated from the model types
//! ([`crate::model`]): their fields, doc comments and `schemars` attributes. String fields whose
//! values come from a name table take their `enum` from that table ([`names`]), so the schema
//! cannot fall behind the code; `cargo xtask generate` writes the file and `--check` fails when
//! it differs.

use schemars::generate::SchemaSettings;
use schemars::transform::{transform_subschemas, Transform};
use schemars::{json_schema, Schema, SchemaGenerator};
use serde_json::Value;

/// The schema of [`crate::Plan`], draft 2020-12, every subschema inline (the file reads top
/// to bottom like the JSON it describes).
pub fn plan_schema() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .for_serialize()
        .with(|s| s.inline_subschemas = true)
        .with_transform(Closed)
        .into_generator();
    generator.into_root_schema_for::<crate::Plan>().to_value()
}

/// [`plan_schema`] as the committed file: pretty-printed, one trailing newline.
pub fn plan_schema_json() -> String {
    let mut s = serde_json::to_string_pretty(&plan_schema()).unwrap_or_default();
    s.push('\n');
    s
}

/// Objects of the plan have exactly the keys the model serializes (`additionalProperties:
/// false`), and numbers carry no `format` annotation (the JSON has only JSON numbers).
#[derive(Clone)]
struct Closed;

impl Transform for Closed {
    fn transform(&mut self, schema: &mut Schema) {
        if let Some(obj) = schema.as_object_mut() {
            obj.remove("format");
            if obj.contains_key("properties") {
                obj.insert("additionalProperties".into(), Value::Bool(false));
            }
        }
        transform_subschemas(self, schema);
    }
}

/// A string field whose values are the names of the strum enum `T` (its `as_str` names, in
/// declaration order).
pub fn names<T>(_: &mut SchemaGenerator) -> Schema
where
    T: strum::IntoEnumIterator + Into<&'static str>,
{
    let names: Vec<&'static str> = T::iter().map(Into::into).collect();
    json_schema!({ "type": "string", "enum": names })
}

/// `schema_version`: exactly [`crate::model::SCHEMA_VERSION`].
pub fn schema_version(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "const": crate::model::SCHEMA_VERSION })
}
