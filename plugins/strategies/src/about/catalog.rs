//! The attributes Engram knows by name: what a fact can be about, whether a holder has
//! one value of it at a time, and how questions ask for it.
//!
//! An attribute outside this catalog still works: a summary such as "User's dentist is
//! Dr. Kim" names the attribute "dentist", which is many-valued (nothing replaces it
//! but its own negation) and found only by its words.

/// One attribute of a holder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attribute {
    /// The stored name (`memories.attribute`).
    pub name: &'static str,
    /// A holder has one value at a time: a new value replaces the live one.
    pub single: bool,
    /// Attributes of one group answer the same questions ("how do I get around": the
    /// car and the commute), and a change of one ends the others.
    pub group: &'static str,
    /// Nouns that name it in "X's <noun> is <value>", longest first.
    pub nouns: &'static [&'static [&'static str]],
    /// Word sequences that, in a question, ask for it.
    pub asked_by: &'static [&'static [&'static str]],
    /// Words its statements are usually made with, added to a question's full-text
    /// query when the question asks for it ("where am I living" finds "moved to").
    pub said_with: &'static [&'static str],
}

macro_rules! attribute {
    ($name:literal, single: $single:literal, group: $group:literal,
     nouns: [$($noun:expr),* $(,)?], asked_by: [$($asked:expr),* $(,)?], said_with: [$($said:literal),* $(,)?]) => {
        Attribute {
            name: $name,
            single: $single,
            group: $group,
            nouns: &[$(&$noun),*],
            asked_by: &[$(&$asked),*],
            said_with: &[$($said),*],
        }
    };
}

pub const NAME: &str = "name";
pub const PHONE: &str = "phone";
pub const EMAIL: &str = "email";
pub const ADDRESS: &str = "address";
pub const PO_BOX: &str = "po box";
pub const RESIDENCE: &str = "residence";
pub const HOMETOWN: &str = "hometown";
pub const BIRTHDAY: &str = "birthday";
pub const AGE: &str = "age";
pub const EMPLOYER: &str = "employer";
pub const OCCUPATION: &str = "occupation";
pub const SHIFT: &str = "shift";
pub const SCHOOL: &str = "school";
pub const INCOME: &str = "income";
pub const VEHICLE: &str = "vehicle";
pub const COMMUTE: &str = "commute";
pub const DIET: &str = "diet";
pub const ALLERGY: &str = "allergy";
pub const MEDICATION: &str = "medication";
pub const PARTNER: &str = "partner";
pub const RELATIONSHIP_STATUS: &str = "relationship status";
pub const SPOKEN_LANGUAGE: &str = "language";
pub const PROGRAMMING_LANGUAGE: &str = "programming language";
pub const LEARNING: &str = "learning";
pub const ACTIVITY: &str = "activity";
/// "favorite <noun>": one catalog entry for every noun; the stored name carries it.
pub const FAVORITE: &str = "favorite";
/// "preferred <noun>", from "prefers <noun phrase>".
pub const PREFERRED: &str = "preferred";

pub const CATALOG: &[Attribute] = &[
    attribute!("name", single: true, group: "name",
        nouns: [["name"], ["full", "name"], ["first", "name"], ["nickname"]],
        asked_by: [["name"], ["called"]],
        said_with: ["name", "called", "call"]),
    attribute!("phone", single: true, group: "phone",
        nouns: [["phone", "number"], ["cell", "number"], ["mobile", "number"], ["cell", "phone"],
                ["telephone", "number"], ["phone"], ["cell"], ["mobile"], ["telephone"], ["number"]],
        asked_by: [["phone"], ["number"], ["call"], ["reach"], ["text"], ["cell"], ["mobile"]],
        said_with: ["phone", "number", "call", "reach", "cell", "mobile", "text"]),
    attribute!("email", single: true, group: "email",
        nouns: [["email", "address"], ["e", "mail", "address"], ["email"], ["e", "mail"]],
        asked_by: [["email"], ["e", "mail"]],
        said_with: ["email", "mail"]),
    attribute!("address", single: true, group: "address",
        nouns: [["home", "address"], ["street", "address"], ["mailing", "address"],
                ["postal", "address"], ["address"]],
        asked_by: [["address"], ["deliver"], ["delivered"], ["delivery"], ["ship"], ["shipped"],
                   ["shipping"], ["mail"], ["mailed"], ["package"], ["parcel"]],
        said_with: ["address", "live", "lives", "street", "moved"]),
    attribute!("po box", single: true, group: "address",
        nouns: [["po", "box", "number"], ["p", "o", "box"], ["po", "box"], ["post", "office", "box"]],
        asked_by: [["po", "box"], ["post", "office", "box"]],
        said_with: ["box"]),
    attribute!("residence", single: true, group: "residence",
        nouns: [["home", "city"], ["city"], ["current", "city"]],
        asked_by: [["live"], ["living"], ["lives"], ["reside"], ["based"], ["city"], ["moved"],
                   ["home"]],
        said_with: ["live", "lives", "living", "based", "moved", "move", "city", "relocated"]),
    attribute!("hometown", single: true, group: "hometown",
        nouns: [["hometown"], ["home", "town"], ["birthplace"]],
        asked_by: [["hometown"], ["home", "town"], ["grow", "up"], ["grew", "up"], ["raised"],
                   ["birthplace"], ["come", "from"], ["where", "from"]],
        said_with: ["grew", "grow", "raised", "born", "hometown", "from"]),
    attribute!("birthday", single: true, group: "birthday",
        nouns: [["birthday"], ["birth", "date"], ["date", "of", "birth"], ["bday"]],
        asked_by: [["birthday"], ["born"], ["bday"]],
        said_with: ["birthday", "born"]),
    attribute!("age", single: true, group: "age",
        nouns: [["age"]],
        asked_by: [["how", "old"], ["age"]],
        said_with: ["old", "age"]),
    attribute!("employer", single: true, group: "work",
        nouns: [["employer"], ["company"], ["workplace"], ["firm"]],
        asked_by: [["work"], ["working"], ["works"], ["job"], ["employer"], ["company"],
                   ["employed"], ["workplace"]],
        said_with: ["work", "works", "working", "job", "joined", "hired", "employer", "company"]),
    attribute!("occupation", single: true, group: "work",
        nouns: [["job", "title"], ["job"], ["occupation"], ["profession"], ["role"], ["title"]],
        asked_by: [["job"], ["occupation"], ["profession"], ["do", "for", "work"],
                   ["do", "for", "a", "living"], ["work", "as"], ["career"]],
        said_with: ["job", "work", "works"]),
    attribute!("shift", single: true, group: "work",
        nouns: [["shift"], ["shifts"], ["work", "schedule"], ["schedule"], ["hours"]],
        asked_by: [["hours"], ["shift"], ["shifts"], ["schedule"]],
        said_with: ["shift", "shifts", "hours", "schedule"]),
    attribute!("income", single: true, group: "income",
        nouns: [["salary"], ["income"], ["pay"], ["wage"], ["wages"]],
        asked_by: [["salary"], ["income"], ["earn"], ["earns"], ["paid"], ["wage"], ["wages"],
                   ["make", "a", "year"], ["how", "much", "do", "i", "make"]],
        said_with: ["salary", "income", "earn", "earns", "make", "makes", "paid"]),
    attribute!("school", single: true, group: "school",
        nouns: [["school"], ["university"], ["college"]],
        asked_by: [["school"], ["university"], ["college"], ["study"], ["studying"]],
        said_with: ["school", "study", "studies", "university", "college"]),
    attribute!("vehicle", single: true, group: "transport",
        nouns: [["car"], ["ride"], ["vehicle"], ["truck"], ["motorbike"], ["motorcycle"],
                ["scooter"], ["bike"]],
        asked_by: [["car"], ["drive"], ["drives"], ["driving"], ["vehicle"], ["ride"], ["truck"],
                   ["get", "around"]],
        said_with: ["car", "drive", "drives", "ride", "vehicle"]),
    attribute!("commute", single: true, group: "transport",
        nouns: [["commute"]],
        asked_by: [["commute"], ["get", "around"], ["get", "to", "work"], ["transport"],
                   ["transportation"]],
        said_with: ["commute", "train", "bus", "subway", "bike"]),
    attribute!("diet", single: true, group: "diet",
        nouns: [["diet"]],
        asked_by: [["eat"], ["eats"], ["eating"], ["diet"], ["vegan"], ["vegetarian"]],
        said_with: ["eat", "eats", "diet", "vegan", "vegetarian"]),
    attribute!("allergy", single: false, group: "allergy",
        nouns: [["allergy"], ["allergies"]],
        asked_by: [["allergic"], ["allergy"], ["allergies"]],
        said_with: ["allergic", "allergy"]),
    attribute!("health", single: false, group: "health",
        nouns: [["health"], ["condition"], ["diagnosis"]],
        asked_by: [["health"], ["medical"], ["condition"], ["diagnosis"], ["diagnosed"],
                   ["doctor"], ["illness"], ["sick"]],
        said_with: ["doctor", "diagnosed", "diagnosis", "medical", "health", "therapy", "symptoms",
                    "surgery", "hospital", "prescribed", "condition"]),
    attribute!("medication", single: false, group: "health",
        nouns: [["medication"], ["medications"], ["meds"], ["medicine"], ["prescription"]],
        asked_by: [["medication"], ["medications"], ["meds"], ["medicine"], ["pills"],
                   ["prescription"], ["prescribed"]],
        said_with: ["medication", "meds", "medicine", "pills", "prescription"]),
    attribute!("partner", single: true, group: "partner",
        nouns: [["partner"], ["wife"], ["husband"], ["spouse"], ["girlfriend"], ["boyfriend"],
                ["fiance"], ["fiancee"]],
        asked_by: [["partner"], ["wife"], ["husband"], ["spouse"], ["girlfriend"], ["boyfriend"],
                   ["fiance"], ["fiancee"], ["married", "to"]],
        said_with: ["wife", "husband", "partner"]),
    attribute!("relationship status", single: true, group: "partner",
        nouns: [["relationship", "status"]],
        asked_by: [["married"], ["single"], ["relationship"]],
        said_with: ["married", "single", "divorced", "engaged"]),
    attribute!("language", single: false, group: "language",
        nouns: [["native", "language"], ["first", "language"], ["mother", "tongue"]],
        asked_by: [["language"], ["languages"], ["speak"], ["speaks"]],
        said_with: ["speak", "speaks", "language"]),
    attribute!("programming language", single: false, group: "language",
        nouns: [["programming", "language"], ["stack"]],
        asked_by: [["language"], ["languages"], ["code"], ["coding"], ["program"],
                   ["programming"]],
        said_with: ["writes", "codes", "code", "language", "person"]),
    attribute!("learning", single: false, group: "learning",
        nouns: [],
        asked_by: [["learning"], ["learn"], ["studying"]],
        said_with: ["learning", "learn"]),
    attribute!("activity", single: false, group: "activity",
        nouns: [["hobby"], ["sport"], ["hobbies"]],
        asked_by: [["activity"], ["activities"], ["sport"], ["sports"], ["hobby"], ["hobbies"],
                   ["play"], ["plays"], ["do", "on"]],
        said_with: ["plays", "play", "does"]),
];

/// `favorite <noun>` for the words after "favourite", a noun written several ways
/// named one way ("film" and "movie", "colour" and "color"), so that a new favourite
/// film replaces the favourite movie.
pub fn favorite(noun: &[&str]) -> String {
    let canonical: Vec<&str> = noun
        .iter()
        .map(|w| match *w {
            "film" | "films" | "movies" => "movie",
            "colour" | "colours" | "colors" => "color",
            "tune" | "track" | "songs" => "song",
            "musician" | "singer" | "artists" | "rapper" => "artist",
            "dish" | "meal" | "cuisine" | "foods" => "food",
            "novel" | "books" => "book",
            "series" | "shows" => "show",
            "videogame" | "games" => "game",
            "beverage" | "drinks" => "drink",
            "team" | "teams" | "club" => "team",
            other => other,
        })
        .collect();
    if canonical.is_empty() {
        FAVORITE.to_string()
    } else {
        format!("{FAVORITE} {}", canonical.join(" "))
    }
}

/// The type of a fact stating `attribute`: who the user is (identity), the rules of
/// their health (constraint), what they do regularly (habit), what they like
/// (preference).
pub fn memory_type(attribute: &str) -> crate::model::MemoryType {
    use crate::model::MemoryType;
    if attribute.starts_with(FAVORITE) || attribute.starts_with(PREFERRED) {
        return MemoryType::Preference;
    }
    match attribute {
        DIET | ALLERGY | MEDICATION => MemoryType::Constraint,
        COMMUTE | SHIFT | ACTIVITY => MemoryType::Habit,
        PROGRAMMING_LANGUAGE => MemoryType::Preference,
        LEARNING => MemoryType::Goal,
        PARTNER => MemoryType::Relationship,
        _ => MemoryType::Identity,
    }
}

/// The catalog entry named `name` (`favorite ...` and `preferred ...` by their kind).
pub fn by_name(name: &str) -> Option<&'static Attribute> {
    CATALOG.iter().find(|a| a.name == name)
}

/// Whether a holder has one value of `name` at a time. Favourites and preferences are
/// single ("my favourite language is now Haskell"); attributes outside the catalog are
/// not.
pub fn is_single(name: &str) -> bool {
    name.starts_with("favorite")
        || name.starts_with("preferred")
        || by_name(name).is_some_and(|a| a.single)
}

/// The group an attribute belongs to: its catalog group, or itself.
pub fn group_of(name: &str) -> &str {
    by_name(name).map_or(name, |a| a.group)
}

/// The catalog attribute a possessive noun phrase names ("phone number", "ride"),
/// longest match first; `favorite X` and `preferred X` as themselves.
pub fn by_noun(noun_phrase: &[&str]) -> Option<String> {
    match noun_phrase {
        ["favorite" | "favourite", rest @ ..] => {
            return Some(favorite(rest));
        }
        [] => return None,
        _ => {}
    }
    CATALOG
        .iter()
        .flat_map(|a| a.nouns.iter().map(move |noun| (a, *noun)))
        .filter(|(_, noun)| noun_phrase.ends_with(noun))
        .max_by_key(|(_, noun)| noun.len())
        .map(|(a, _)| a.name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn possessive_nouns_name_attributes() {
        assert_eq!(by_noun(&["phone", "number"]).as_deref(), Some(PHONE));
        assert_eq!(by_noun(&["number"]).as_deref(), Some(PHONE));
        assert_eq!(by_noun(&["po", "box", "number"]).as_deref(), Some(PO_BOX));
        assert_eq!(by_noun(&["ride"]).as_deref(), Some(VEHICLE));
        assert_eq!(
            by_noun(&["favorite", "language"]).as_deref(),
            Some("favorite language")
        );
        assert_eq!(by_noun(&["favourite"]).as_deref(), Some(FAVORITE));
        assert_eq!(by_noun(&["dentist"]), None);
        assert!(is_single("favorite language") && is_single(PHONE) && !is_single(ALLERGY));
        assert_eq!(group_of(COMMUTE), group_of(VEHICLE));
        assert_eq!(group_of("dentist"), "dentist");
    }

    #[test]
    fn names_are_unique() {
        for (i, a) in CATALOG.iter().enumerate() {
            assert!(
                CATALOG[i + 1..].iter().all(|b| b.name != a.name),
                "{}",
                a.name
            );
        }
    }
}
