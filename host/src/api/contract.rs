//! What every `/api` operation shares in the OpenAPI document, added once to the
//! document the route table generates (see [`super::openapi`]): the two ways to
//! authenticate, and the problem answers any operation can give before its handler
//! decides anything (401 without credentials; 400, 413 and 422 for a request that
//! cannot be read; 500). Each handler's `#[utoipa::path]` lists only its own answers.
//!
//! Also the schemas of the parameters several routes share (`user`, `limit`, the
//! cursors), so that each is written once and matches the check the server makes.

use utoipa::openapi::path::{Operation, ParameterIn};
use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
use utoipa::openapi::security::{
    ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme,
};
use utoipa::openapi::{ContentBuilder, Object, OpenApi, Ref, RefOr, Response, ResponseBuilder};

use super::auth::SESSION_COOKIE;
use super::error::PROBLEM_CONTENT_TYPE;

/// The names of the security schemes.
const BEARER: &str = "bearer";
const SESSION: &str = "session";
const SESSION_SECRET: &str = "sessionSecret";

/// Completes `doc`: the security schemes, required by every operation, and the
/// problem answers every operation shares.
pub fn complete(doc: &mut OpenApi) {
    let components = doc.components.get_or_insert_with(Default::default);
    components.add_security_scheme(
        BEARER,
        SecurityScheme::Http(
            HttpBuilder::new()
                .scheme(HttpAuthScheme::Bearer)
                .description(Some(
                    "`Authorization: Bearer <token>`. Two tokens open `/api`: the agent's ({data_dir}/auth-token, or ENGRAM_TOKEN) and the person's, the operator token ({data_dir}/operator-token, or ENGRAM_OPERATOR_TOKEN). The person's acts (clearing all memories, approving a tool, `confirm_tools`) need the operator token or a dashboard session: the agent's token gets 403 `person-required`.",
                ))
                .build(),
        ),
    );
    components.add_security_scheme(
        SESSION,
        SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
            SESSION_COOKIE,
            "The dashboard's session cookie (HttpOnly, SameSite=Strict), set by its login with the operator token. It authenticates only together with `sessionSecret`.",
        ))),
    );
    components.add_security_scheme(
        SESSION_SECRET,
        SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
            "X-Engram-CSRF",
            "The dashboard session's secret, which its login hands to the page: sent on every `/api` call of the page, with the `session` cookie.",
        ))),
    );
    let security = vec![
        SecurityRequirement::new(BEARER, Vec::<String>::new()),
        SecurityRequirement::new(SESSION, Vec::<String>::new())
            .add(SESSION_SECRET, Vec::<String>::new()),
    ];
    doc.security = Some(security.clone());
    for item in doc.paths.paths.values_mut() {
        for operation in [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.patch,
        ]
        .into_iter()
        .flatten()
        {
            operation.security = Some(security.clone());
            add_shared_answers(operation);
        }
    }
}

/// `doc` as JSON. utoipa 5.5 writes a link's fields in snake case
/// (`operation_id`); OpenAPI names them `operationId`, `operationRef` and
/// `requestBody`, so they are renamed here.
pub fn to_json(doc: &OpenApi) -> serde_json::Value {
    let mut json = serde_json::to_value(doc).unwrap_or_default();
    let operations = json
        .get_mut("paths")
        .and_then(|paths| paths.as_object_mut())
        .into_iter()
        .flat_map(|paths| paths.values_mut())
        .filter_map(|item| item.as_object_mut())
        .flat_map(|item| item.values_mut());
    for operation in operations {
        let links = operation
            .get_mut("responses")
            .and_then(|r| r.as_object_mut())
            .into_iter()
            .flat_map(|responses| responses.values_mut())
            .filter_map(|response| response.get_mut("links"))
            .filter_map(|links| links.as_object_mut())
            .flat_map(|links| links.values_mut())
            .filter_map(|link| link.as_object_mut());
        for link in links {
            for (from, to) in [
                ("operation_id", "operationId"),
                ("operation_ref", "operationRef"),
                ("request_body", "requestBody"),
            ] {
                if let Some(value) = link.remove(from) {
                    link.insert(to.to_string(), value);
                }
            }
        }
    }
    json
}

/// The answers every operation can give besides its own.
fn add_shared_answers(operation: &mut Operation) {
    let has_query = operation
        .parameters
        .iter()
        .flatten()
        .any(|p| p.parameter_in == ParameterIn::Query);
    let has_path = operation
        .parameters
        .iter()
        .flatten()
        .any(|p| p.parameter_in == ParameterIn::Path);
    let has_body = operation.request_body.is_some();
    let names_user = operation
        .parameters
        .iter()
        .flatten()
        .any(|p| p.parameter_in == ParameterIn::Query && p.name == "user");
    let responses = &mut operation.responses.responses;
    let mut add = |status: &str, description: &str| {
        responses
            .entry(status.to_string())
            .or_insert_with(|| problem(description));
    };
    add(
        "401",
        "`unauthorized`: no valid bearer token, and no dashboard session with its secret",
    );
    if has_query || has_body {
        add(
            "400",
            "`unknown-field` (a query parameter or body field the operation does not take), `invalid-json` (the body is not JSON), `invalid-body` (the body cannot be read)",
        );
    }
    if has_query || has_body || has_path {
        add(
            "422",
            "`invalid-field`: a parameter or field has a value outside its schema (`field` names it)",
        );
    }
    if names_user {
        add("403", USER_NOT_ALLOWED);
    }
    if has_body {
        add(
            "413",
            "`payload-too-large`: the body is over the limit (1 MiB; 64 MiB for the import)",
        );
    }
    add(
        "500",
        "`internal`: the daemon failed; its log has the details",
    );
}

/// The refusal of a `user` the caller may not act for, on every operation that takes
/// one.
pub const USER_NOT_ALLOWED: &str = "`user-not-allowed`: the agent's token names a user outside `agent.users` (config.yaml); the person's credentials act for any user";

/// A problem-document answer.
fn problem(description: &str) -> RefOr<Response> {
    ResponseBuilder::new()
        .description(description)
        .content(
            PROBLEM_CONTENT_TYPE,
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("Problem")))
                .build(),
        )
        .build()
        .into()
}

// ---- shared parameter schemas (`#[param(schema_with = ...)]`) ------------------------

/// Characters `char::is_control` refuses (Unicode Cc), as a regex class.
const NO_CONTROL: &str = r"[^\x00-\x1F\x7F-\x9F]";

fn string(description: &str) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(SchemaType::Type(Type::String))
        .description(Some(description))
}

/// `user`: 1 to 128 characters, none of them a control character
/// ([`crate::memory::user_or_default`]).
pub fn user() -> Object {
    string("The user whose data to use (default `default`): 1 to 128 characters, no control characters.")
        .min_length(Some(1))
        .max_length(Some(crate::memory::MAX_USER_LEN))
        .pattern(Some(format!("^{NO_CONTROL}*$")))
        .build()
}

/// `user` in a request body: as [`user`], or `null` (the default user), since a body
/// field that is absent and one that is `null` are read alike.
pub fn body_user() -> Object {
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
        .description(Some("The user whose data to use (`null` or absent: `default`): 1 to 128 characters, no control characters."))
        .min_length(Some(1))
        .max_length(Some(crate::memory::MAX_USER_LEN))
        .pattern(Some(format!("^{NO_CONTROL}*$")))
        .build()
}

/// `limit` of a page: 1 to 500, default 50.
pub fn limit() -> Object {
    ObjectBuilder::new()
        .schema_type(SchemaType::Type(Type::Integer))
        .minimum(Some(1))
        .maximum(Some(500))
        .description(Some("Page size: 1 to 500, default 50."))
        .build()
}

/// The cursor of the memory and person lists: `<ms>.<id>` of the previous page's last
/// row ([`crate::memory::store`]'s `parse_cursor`).
pub fn time_cursor() -> Object {
    string("`next_cursor` of the previous page.")
        .pattern(Some(r"^[0-9]{1,18}\.[a-z0-9_]{1,64}$"))
        .build()
}

/// The cursor of the audit log: the sequence number of the previous page's last row.
pub fn seq_cursor() -> Object {
    string("`next_cursor` of the previous page.")
        .pattern(Some(r"^[0-9]{1,18}$"))
        .build()
}

/// The cursor of the schedules: the id of the previous page's last schedule.
pub fn id_cursor() -> Object {
    string("`next_cursor` of the previous page.")
        .pattern(Some(r"^sch_[0-9a-z]{26}$"))
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_tool_parameter_names_exactly_the_host_tools() {
        let json = super::super::openapi();
        let parameters = &json["paths"]["/api/turns/{id}/tools/{name}"]["post"]["parameters"];
        let name = parameters
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["name"] == "name"))
            .expect("the name parameter");
        let pattern = name["schema"]["pattern"].as_str().expect("a pattern");
        let mut documented: Vec<&str> = pattern
            .trim_start_matches("^(")
            .trim_end_matches(")$")
            .split('|')
            .collect();
        let mut tools: Vec<&str> = crate::tools::HOST_TOOLS.iter().map(|t| t.name).collect();
        documented.sort_unstable();
        tools.sort_unstable();
        assert_eq!(documented, tools);
    }

    #[test]
    fn every_operation_requires_a_credential_and_documents_the_shared_answers() {
        let json = super::super::openapi();
        let schemes = &json["components"]["securitySchemes"];
        assert_eq!(schemes[BEARER]["scheme"], "bearer");
        assert_eq!(schemes[SESSION]["in"], "cookie");
        assert_eq!(schemes[SESSION]["name"], SESSION_COOKIE);
        assert_eq!(schemes[SESSION_SECRET]["in"], "header");
        let header = schemes[SESSION_SECRET]["name"]
            .as_str()
            .expect("a header name");
        assert!(header.eq_ignore_ascii_case(super::super::auth::SESSION_HEADER));
        let paths = json["paths"].as_object().expect("paths");
        assert!(paths.len() > 30);
        for (path, item) in paths {
            assert!(path.starts_with("/api/"), "{path}");
            for (method, operation) in item.as_object().expect("path item") {
                let security = operation["security"].as_array().expect("security");
                assert_eq!(security.len(), 2, "{method} {path}");
                let responses = &operation["responses"];
                for status in ["401", "500"] {
                    let content = &responses[status]["content"][PROBLEM_CONTENT_TYPE];
                    assert_eq!(
                        content["schema"]["$ref"], "#/components/schemas/Problem",
                        "{method} {path} {status}"
                    );
                }
                for link in operation["responses"]
                    .as_object()
                    .into_iter()
                    .flat_map(|r| r.values())
                    .filter_map(|r| r["links"].as_object())
                    .flat_map(|links| links.values())
                {
                    assert!(link["operationId"].is_string(), "{method} {path}: {link}");
                    assert!(
                        link.get("operation_id").is_none(),
                        "{method} {path}: {link}"
                    );
                }
                if operation.get("requestBody").is_some() {
                    for status in ["400", "413", "422"] {
                        assert!(responses[status].is_object(), "{method} {path} {status}");
                    }
                }
            }
        }
    }
}
