//! `/api/schedules...`: scheduled skill runs (README, "Schedules").
//!
//! A schedule invokes an active skill with a fixed input every `every` seconds (at
//! least 60), or at the minutes a 5-field `cron` expression matches, in UTC (one of
//! the two). An interval schedule first runs at `start_at` (RFC 3339), or at once when
//! that is absent or past; a cron schedule at its first matching minute from then.
//! The daemon's scheduler checks every few seconds, opens a turn through
//! `POST /api/turns`'s code path (channel `schedule`, the skill invoked), and
//! announces `schedule.fired {schedule_id, skill, turn_id}` on `GET /api/events`;
//! a run whose skill is gone or inactive announces `schedule.failed {schedule_id,
//! skill, code, reason}` and the schedule stays for its next slot.

use std::sync::Arc;

use super::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use utoipa::openapi::schema::{
    AdditionalProperties, AllOfBuilder, KnownFormat, ObjectBuilder, OneOfBuilder, SchemaFormat,
    SchemaType, Type,
};
use utoipa::openapi::{RefOr, Schema};
use utoipa::{IntoParams, ToSchema};

use super::blocking;
use super::error::{ApiError, Problem};
use super::extract::{Acting, ApiJson, ApiQuery, UserQuery};
use crate::app::App;
use crate::schedule::cron::{Cron, MAX_CRON_CHARS};
use crate::schedule::store::DEFAULT_PAGE;
use crate::schedule::{NewCadence, NewSchedule, Schedule, SchedulePage};
use crate::skills::LibraryError;
use crate::turns::input::Text;

/// `POST /api/schedules` (its OpenAPI schema: [`create_schedule_schema`]).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateSchedule {
    /// The slug of an installed, active skill.
    pub skill: String,
    /// Seconds between runs, 60 to 31622400. Give this or `cron`.
    #[serde(default, deserialize_with = "whole_number")]
    pub every: Option<u64>,
    /// A 5-field cron expression, evaluated in UTC. Give this or `every`.
    pub cron: Option<String>,
    /// The message of each run's turn (not only whitespace, at most 64 KiB as UTF-8).
    pub input: String,
    /// Default `default`.
    pub user: Option<String>,
    /// The first run (RFC 3339); absent or past: at once. With `cron`: the first
    /// matching minute at or after it.
    pub start_at: Option<String>,
}

/// A whole number, also written with a zero fraction (`60.0`): JSON Schema's `integer`
/// counts it as one, serde's `u64` does not.
fn whole_number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let Some(number) = Option::<serde_json::Number>::deserialize(d)? else {
        return Ok(None);
    };
    let whole = number.as_u64().or_else(|| {
        number
            .as_f64()
            .filter(|f| f.fract() == 0.0 && (0.0..=u64::MAX as f64).contains(f))
            .map(|f| f as u64)
    });
    whole.map(Some).ok_or_else(|| {
        serde::de::Error::custom(format!("{number} is not a whole number of seconds"))
    })
}

/// Written out rather than derived: exactly one of `every` and `cron` is required,
/// which the derive cannot say.
impl utoipa::PartialSchema for CreateSchedule {
    fn schema() -> RefOr<Schema> {
        create_schedule_schema()
    }
}

impl ToSchema for CreateSchedule {}

/// The shape of a cron expression: five whitespace-separated fields of the characters
/// the grammar uses. Every expression the server accepts has it (so a generated
/// client never refuses one, `*/5 * * * *` included), and one without it is refused;
/// what the shape cannot say (a value out of its field's range, a range written
/// backwards, a step of 0, a day that never comes) the server refuses with 422
/// `invalid-field`, naming the cron field at fault.
const CRON_PATTERN: &str = r"^\s*[0-9A-Za-z*,/+-]+(\s+[0-9A-Za-z*,/+-]+){4}\s*$";

fn create_schedule_schema() -> RefOr<Schema> {
    let nullable = |t: Type| SchemaType::from_iter([t, Type::Null]);
    let only = |field: &str, t: Type, other: &str| {
        ObjectBuilder::new()
            .property(field, ObjectBuilder::new().schema_type(SchemaType::Type(t)))
            .property(
                other,
                ObjectBuilder::new().schema_type(SchemaType::Type(Type::Null)),
            )
            .required(field)
    };
    let fields = ObjectBuilder::new()
        .description(Some("`POST /api/schedules`: `skill` and `input`, and exactly one of `every` and `cron` (the other absent or null)."))
        .property(
            "skill",
            ObjectBuilder::new()
                .schema_type(SchemaType::Type(Type::String))
                .description(Some("The slug of an installed, active skill."))
                .min_length(Some(1))
                .max_length(Some(crate::skills::MAX_NAME_CHARS))
                .pattern(Some(r"^[a-z0-9]+(-[a-z0-9]+)*$")),
        )
        .required("skill")
        .property(
            "every",
            ObjectBuilder::new()
                .schema_type(nullable(Type::Integer))
                .description(Some("Seconds between runs, 60 to 31622400."))
                .minimum(Some(60))
                .maximum(Some(31_622_400)),
        )
        .property(
            "cron",
            ObjectBuilder::new()
                .schema_type(nullable(Type::String))
                .description(Some("A 5-field cron expression, `minute hour day-of-month month day-of-week`, evaluated in UTC: `*`, `a,b`, `a-b`, `*/n`, `a-b/n`, `JAN`..`DEC`, `SUN`..`SAT` (0 and 7 are Sunday); when both day fields are restricted, either matches. The pattern is the shape; a value out of its field's range, a backwards range, a step of 0 or an expression that never fires (`0 0 30 FEB *`) is 422 `invalid-field`."))
                .max_length(Some(MAX_CRON_CHARS))
                .pattern(Some(CRON_PATTERN)),
        )
        .property(
            "input",
            ObjectBuilder::new()
                .schema_type(SchemaType::Type(Type::String))
                .description(Some("The message of each run's turn: not only whitespace, at most 64 KiB as UTF-8."))
                .min_length(Some(1))
                .pattern(Some(r"[^\x09-\x0D\x20\x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]")),
        )
        .required("input")
        .property("user", super::contract::body_user())
        .property(
            "start_at",
            ObjectBuilder::new()
                .schema_type(nullable(Type::String))
                .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
                .description(Some("The first run (RFC 3339); absent or past: at once. With `cron`: the first matching minute at or after it.")),
        )
        .additional_properties(Some(AdditionalProperties::FreeForm(false)));
    AllOfBuilder::new()
        .item(fields)
        .item(
            OneOfBuilder::new()
                .item(only("every", Type::Integer, "cron"))
                .item(only("cron", Type::String, "every")),
        )
        .into()
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    /// 1 to 500 (default 50).
    #[param(schema_with = super::contract::limit)]
    pub limit: Option<usize>,
    /// `next_cursor` of the previous page.
    #[param(schema_with = super::contract::id_cursor)]
    pub cursor: Option<String>,
    /// Whose schedules (default `default`): each user sees only their own.
    #[param(schema_with = super::contract::user)]
    pub user: Option<String>,
}

/// `sch_` and 26 lowercase base-32 digits: the ids [`crate::ids::new_id`] makes, and
/// the OpenAPI document's pattern for a schedule id and a cursor.
fn is_schedule_id(id: &str) -> bool {
    id.strip_prefix("sch_").is_some_and(|ulid| {
        ulid.len() == 26
            && ulid
                .bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
    })
}

fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("no schedule `{}`", crate::gate::policy::shown(id)))
}

fn not_a_slug(skill: &str) -> ApiError {
    ApiError::invalid_field(
        "skill",
        format!("`{}` is not a slug", crate::gate::policy::shown(skill)),
    )
}

/// `skill` must be installed (404 `unknown-skill` otherwise) and active (409
/// `inactive-skill`): refusals that depend on the state, not on the request's shape.
fn check_skill(app: &App, skill: &str) -> Result<(), ApiError> {
    let refused = |status: StatusCode, code: &'static str, detail: String| ApiError {
        field: Some("skill".into()),
        ..ApiError::new(status, code, detail)
    };
    match app.skills.entry(skill) {
        Ok(entry) if entry.active => Ok(()),
        Ok(_) => Err(refused(
            StatusCode::CONFLICT,
            "inactive-skill",
            format!("skill: `{skill}` is not active; activate it first"),
        )),
        Err(LibraryError::InvalidId { .. }) => Err(not_a_slug(skill)),
        Err(LibraryError::NotFound(_)) => Err(refused(
            StatusCode::NOT_FOUND,
            "unknown-skill",
            format!(
                "skill: no installed skill named `{}`",
                crate::gate::policy::shown(skill)
            ),
        )),
        Err(e) => Err(e.into()),
    }
}

#[utoipa::path(post, path = "/api/schedules", tag = "schedules",
    summary = "Schedule a skill",
    description = "Runs `skill` with `input` every `every` seconds (at least 60), first at `start_at` or at once; or, with `cron` instead, at each minute the 5-field expression matches, evaluated in UTC (`minute hour day-of-month month day-of-week`; `*`, lists, ranges, steps, month and weekday names; when both day fields are restricted, a day matching either runs). Each run opens a turn (channel `schedule`, the skill invoked) and emits `schedule.fired` on /api/events; a run whose skill is gone or inactive emits `schedule.failed`; missed runs are skipped. 404 `unknown-skill` (not installed), 409 `inactive-skill`; 422 `invalid-field` for a bad interval, input or time, for both or neither of `every` and `cron`, and for a bad or never-firing cron expression (`field: cron`, the detail names the cron field at fault).",
    request_body = CreateSchedule,
    responses(
        (status = 201, body = Schedule, links(
            ("GetSchedule" = (operation_id = "get_schedule", parameters(("id" = "$response.body#/id")))),
            ("DeleteSchedule" = (operation_id = "delete_schedule", parameters(("id" = "$response.body#/id"))))
        )),
        (status = 403, description = "`user-not-allowed`: the agent's token names a user outside `agent.users` (config.yaml)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`unknown-skill`: no installed skill has that slug", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`inactive-skill`: the skill is deactivated", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn create_schedule(
    State(app): State<Arc<App>>,
    acting: Acting,
    ApiJson(body): ApiJson<CreateSchedule>,
) -> Result<(StatusCode, Json<Schedule>), ApiError> {
    let user = acting.user(body.user.as_deref())?;
    // Checked here as well as in the store so that a bad cadence is reported before
    // the skill is looked up.
    let cadence = match (body.every, body.cron) {
        (Some(_), Some(_)) => {
            return Err(ApiError::invalid_field(
                "cron",
                "give either `every` or `cron`, not both",
            ));
        }
        (Some(every), None) => NewCadence::Every(
            crate::schedule::due::check_every(every)
                .map_err(|reason| ApiError::invalid_field("every", reason))?,
        ),
        (None, Some(cron)) => {
            Cron::parse(&cron).map_err(|e| ApiError::invalid_field("cron", e.to_string()))?;
            NewCadence::Cron(cron.trim().to_string())
        }
        (None, None) => {
            return Err(ApiError::invalid_field(
                "every",
                "is required: give `every` (seconds) or `cron` (a 5-field cron expression, UTC)",
            ));
        }
    };
    // The message of each run's turn: checked as every turn's is.
    let input = Text::parse("input", body.input)?;
    // The skill's name is checked here, its presence (on disk) below.
    if crate::skills::Slug::parse(&body.skill).is_err() {
        return Err(not_a_slug(&body.skill));
    }
    let start_at = body
        .start_at
        .as_deref()
        .map(crate::time::rfc3339::parse)
        .transpose()
        .map_err(|reason| ApiError::invalid_field("start_at", reason))?;
    blocking(move || {
        check_skill(&app, &body.skill)?;
        let schedule = app.schedules.create(NewSchedule {
            skill: body.skill,
            input: input.into_string(),
            cadence,
            user,
            start_at,
        })?;
        Ok((StatusCode::CREATED, Json(schedule)))
    })
    .await
}

#[utoipa::path(get, path = "/api/schedules", tag = "schedules",
    summary = "Schedules",
    description = "The user's schedules (`user`, default `default`), oldest first, paged by cursor.",
    params(ListParams),
    responses(
        (status = 200, body = SchedulePage),
        (status = 400, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_schedules(
    State(app): State<Arc<App>>,
    acting: Acting,
    ApiQuery(query): ApiQuery<ListParams>,
) -> Result<Json<SchedulePage>, ApiError> {
    if let Some(cursor) = &query.cursor
        && !is_schedule_id(cursor)
    {
        return Err(ApiError::invalid_field(
            "cursor",
            "is not a cursor from a previous page",
        ));
    }
    let limit = query.limit.unwrap_or(DEFAULT_PAGE);
    if !(1..=crate::schedule::store::MAX_PAGE).contains(&limit) {
        return Err(ApiError::invalid_field("limit", "must be 1 to 500"));
    }
    let user = acting.user(query.user.as_deref())?;
    blocking(move || {
        Ok(Json(app.schedules.list(
            &user,
            limit,
            query.cursor.as_deref(),
        )?))
    })
    .await
}

#[utoipa::path(get, path = "/api/schedules/{id}", tag = "schedules",
    summary = "A schedule",
    params(("id" = String, Path, description = "Schedule id (`sch_...`)", pattern = r"^sch_[0-9a-z]{26}$"), UserQuery),
    responses(
        (status = 200, body = Schedule),
        (status = 404, description = "no such schedule for this user", body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_schedule(
    State(app): State<Arc<App>>,
    acting: Acting,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
) -> Result<Json<Schedule>, ApiError> {
    let user = acting.user(query.user.as_deref())?;
    blocking(move || {
        app.schedules
            .get(&id, &user)?
            .map(Json)
            .ok_or_else(|| not_found(&id))
    })
    .await
}

#[utoipa::path(delete, path = "/api/schedules/{id}", tag = "schedules",
    summary = "Delete a schedule",
    description = "The schedule never runs again; turns it already opened are not touched.",
    params(("id" = String, Path, description = "Schedule id", pattern = r"^sch_[0-9a-z]{26}$"), UserQuery),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "no such schedule for this user", body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn delete_schedule(
    State(app): State<Arc<App>>,
    acting: Acting,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
) -> Result<StatusCode, ApiError> {
    let user = acting.user(query.user.as_deref())?;
    blocking(move || {
        if app.schedules.delete(&id, &user)? {
            Ok(StatusCode::NO_CONTENT)
        } else {
            Err(not_found(&id))
        }
    })
    .await
}
