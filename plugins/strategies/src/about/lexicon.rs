//! Word lists that tell what kind of thing a value is: an occupation, a programming
//! language, a means of transport, a diet, a pet. General knowledge of English, not
//! of any conversation: each list names the common members of its class, so that "is a
//! pilot" reads as an occupation and "writes Scala" as a programming language.
//!
//! Every list is sorted, lower case, one word per entry (a multi-word name is matched
//! by its last word, "sql server" by "server" being absent is acceptable: the lists
//! decide what an attribute is, never whether a fact is kept).

/// Occupations, as "is a <word>" or "works as a <word>" name them.
const OCCUPATIONS: &[&str] = &[
    "accountant",
    "actor",
    "actress",
    "administrator",
    "advisor",
    "agent",
    "analyst",
    "apprentice",
    "architect",
    "artist",
    "associate",
    "attorney",
    "auditor",
    "baker",
    "banker",
    "barber",
    "barista",
    "bartender",
    "biologist",
    "bookkeeper",
    "broker",
    "builder",
    "butcher",
    "caregiver",
    "carpenter",
    "cashier",
    "ceo",
    "cfo",
    "chef",
    "chemist",
    "chief",
    "clerk",
    "coach",
    "cofounder",
    "consultant",
    "contractor",
    "cook",
    "coordinator",
    "counselor",
    "cto",
    "dancer",
    "dentist",
    "designer",
    "developer",
    "dietitian",
    "director",
    "dispatcher",
    "doctor",
    "driver",
    "economist",
    "editor",
    "electrician",
    "engineer",
    "entrepreneur",
    "executive",
    "farmer",
    "fellow",
    "firefighter",
    "florist",
    "foreman",
    "founder",
    "freelancer",
    "gardener",
    "geologist",
    "hairdresser",
    "head",
    "historian",
    "housekeeper",
    "illustrator",
    "influencer",
    "instructor",
    "intern",
    "janitor",
    "journalist",
    "judge",
    "lawyer",
    "lead",
    "lecturer",
    "librarian",
    "lifeguard",
    "linguist",
    "machinist",
    "manager",
    "marketer",
    "mathematician",
    "mechanic",
    "medic",
    "midwife",
    "musician",
    "nanny",
    "nurse",
    "officer",
    "optometrist",
    "owner",
    "painter",
    "paralegal",
    "paramedic",
    "partner",
    "pharmacist",
    "photographer",
    "physician",
    "physicist",
    "physiotherapist",
    "pilot",
    "planner",
    "plumber",
    "poet",
    "police",
    "policeman",
    "policewoman",
    "postdoc",
    "president",
    "principal",
    "professor",
    "programmer",
    "psychiatrist",
    "psychologist",
    "realtor",
    "receptionist",
    "reporter",
    "researcher",
    "resident",
    "sailor",
    "salesman",
    "saleswoman",
    "scheduler",
    "scientist",
    "secretary",
    "singer",
    "soldier",
    "specialist",
    "statistician",
    "strategist",
    "streamer",
    "student",
    "supervisor",
    "surgeon",
    "tailor",
    "teacher",
    "technician",
    "tester",
    "therapist",
    "translator",
    "tutor",
    "ux",
    "vet",
    "veterinarian",
    "volunteer",
    "vp",
    "waiter",
    "waitress",
    "welder",
    "writer",
];

/// Programming languages: "writes Scala", "a TypeScript person".
const PROGRAMMING_LANGUAGES: &[&str] = &[
    "ada",
    "assembly",
    "bash",
    "c",
    "c#",
    "c++",
    "clojure",
    "cobol",
    "coffeescript",
    "crystal",
    "dart",
    "delphi",
    "elixir",
    "elm",
    "erlang",
    "f#",
    "fortran",
    "go",
    "golang",
    "groovy",
    "haskell",
    "java",
    "javascript",
    "julia",
    "kotlin",
    "lisp",
    "lua",
    "matlab",
    "nim",
    "objective-c",
    "ocaml",
    "pascal",
    "perl",
    "php",
    "powershell",
    "prolog",
    "python",
    "r",
    "racket",
    "ruby",
    "rust",
    "scala",
    "scheme",
    "smalltalk",
    "solidity",
    "sql",
    "swift",
    "typescript",
    "vba",
    "zig",
];

/// Spoken languages: "speaks Portuguese", "is learning Japanese".
const SPOKEN_LANGUAGES: &[&str] = &[
    "arabic",
    "bengali",
    "cantonese",
    "catalan",
    "chinese",
    "czech",
    "danish",
    "dutch",
    "english",
    "farsi",
    "finnish",
    "french",
    "german",
    "greek",
    "hebrew",
    "hindi",
    "hungarian",
    "indonesian",
    "irish",
    "italian",
    "japanese",
    "korean",
    "latin",
    "malay",
    "mandarin",
    "norwegian",
    "persian",
    "polish",
    "portuguese",
    "punjabi",
    "romanian",
    "russian",
    "serbian",
    "spanish",
    "swahili",
    "swedish",
    "tagalog",
    "tamil",
    "thai",
    "turkish",
    "ukrainian",
    "urdu",
    "vietnamese",
    "welsh",
];

/// Public transport one takes: "takes the train to work".
const TRANSIT: &[&str] = &[
    "bus",
    "ferry",
    "metro",
    "rail",
    "shuttle",
    "streetcar",
    "subway",
    "train",
    "tram",
    "tube",
];

/// Vehicles one drives or rides: "drives a truck", "my ride is a scooter".
const VEHICLES: &[&str] = &[
    "bicycle",
    "bike",
    "car",
    "convertible",
    "coupe",
    "hatchback",
    "minivan",
    "moped",
    "motorbike",
    "motorcycle",
    "pickup",
    "scooter",
    "sedan",
    "suv",
    "truck",
    "van",
    "wagon",
];

/// Diets: "is vegan", "went keto".
const DIETS: &[&str] = &[
    "carnivore",
    "flexitarian",
    "gluten-free",
    "halal",
    "keto",
    "kosher",
    "omnivore",
    "paleo",
    "pescatarian",
    "pescetarian",
    "vegan",
    "vegetarian",
];

/// Animals kept as pets: "my cat Miso", "Nugget the hamster".
const PETS: &[&str] = &[
    "bird",
    "bunny",
    "canary",
    "cat",
    "chinchilla",
    "dog",
    "ferret",
    "fish",
    "gecko",
    "gerbil",
    "goldfish",
    "guinea",
    "hamster",
    "horse",
    "iguana",
    "kitten",
    "lizard",
    "parakeet",
    "parrot",
    "pet",
    "pony",
    "puppy",
    "rabbit",
    "rat",
    "snake",
    "tortoise",
    "turtle",
];

/// Words for medicine, and the endings of drug names (the WHO's INN stems: sertraline,
/// atorvastatin, lisinopril, amoxicillin...), so that "is on sertraline" reads as a
/// medication without a list of every drug.
const MEDICINE_WORDS: &[&str] = &[
    "antibiotics",
    "antidepressants",
    "inhaler",
    "insulin",
    "medication",
    "medications",
    "medicine",
    "meds",
    "pills",
    "prescription",
];
const DRUG_ENDINGS: &[&str] = &[
    "afil", "apine", "azepam", "azole", "cillin", "cycline", "dipine", "dronate", "floxacin",
    "formin", "gliptin", "isone", "mab", "mycin", "olol", "oxetine", "pril", "profen", "prazole",
    "sartan", "statin", "tadine", "tidine", "traline", "triptan", "xaban", "zodone",
];

/// Relations that are a partner: one at a time.
const PARTNERS: &[&str] = &[
    "boyfriend",
    "fiance",
    "fiancee",
    "fiancé",
    "fiancée",
    "girlfriend",
    "husband",
    "partner",
    "spouse",
    "wife",
];

/// Relations to the user, as they are written. Two-word relations are matched first.
const RELATIONS: &[&str] = &[
    "best friend",
    "business partner",
    "mother",
    "mom",
    "mum",
    "father",
    "dad",
    "parent",
    "sister",
    "brother",
    "sibling",
    "wife",
    "husband",
    "partner",
    "spouse",
    "girlfriend",
    "boyfriend",
    "fiance",
    "fiancee",
    "fiancé",
    "fiancée",
    "son",
    "daughter",
    "child",
    "kid",
    "friend",
    "boss",
    "manager",
    "colleague",
    "coworker",
    "co-worker",
    "teammate",
    "roommate",
    "flatmate",
    "housemate",
    "cousin",
    "aunt",
    "uncle",
    "grandmother",
    "grandma",
    "grandfather",
    "grandpa",
    "granddaughter",
    "grandson",
    "niece",
    "nephew",
    "mentor",
    "mentee",
    "neighbor",
    "neighbour",
    "therapist",
    "doctor",
    "dentist",
    "coach",
    "tutor",
    "teacher",
    "landlord",
    "landlady",
    "cofounder",
    "co-founder",
    "client",
    "stepmother",
    "stepfather",
    "stepsister",
    "stepbrother",
    "mother-in-law",
    "father-in-law",
    "sister-in-law",
    "brother-in-law",
    "ex-wife",
    "ex-husband",
    "ex-girlfriend",
    "ex-boyfriend",
    "ex",
    "pediatrician",
    "lawyer",
    "accountant",
    "assistant",
    "supervisor",
    "advisor",
    "adviser",
    "trainer",
];

/// Words that may stand between "my" and a relation without being part of it.
const RELATION_ADJECTIVES: &[&str] = &[
    "older", "younger", "little", "big", "twin", "new", "old", "dear", "eldest", "oldest",
    "youngest", "elder", "baby", "late", "former", "current",
];

/// A relation starting at `words[0]`, after optional adjectives: `(relation, words
/// consumed)`.
pub fn relation_at(words: &[&str]) -> Option<(String, usize)> {
    let adjectives = words
        .iter()
        .take_while(|w| RELATION_ADJECTIVES.contains(w))
        .count();
    let rest = &words[adjectives..];
    if let [first, second, ..] = rest {
        let pair = format!("{first} {second}");
        if RELATIONS.contains(&pair.as_str()) {
            return Some((pair, adjectives + 2));
        }
    }
    let first = rest.first()?;
    (RELATIONS.contains(first) || (is_pet(first) && *first != "pet"))
        .then(|| ((*first).to_owned(), adjectives + 1))
}

fn contains(list: &[&str], word: &str) -> bool {
    list.binary_search(&word).is_ok()
}

pub fn is_occupation(word: &str) -> bool {
    contains(OCCUPATIONS, word)
}

pub fn is_programming_language(word: &str) -> bool {
    contains(PROGRAMMING_LANGUAGES, word)
}

pub fn is_spoken_language(word: &str) -> bool {
    contains(SPOKEN_LANGUAGES, word)
}

pub fn is_transit(word: &str) -> bool {
    contains(TRANSIT, word)
}

pub fn is_vehicle(word: &str) -> bool {
    contains(VEHICLES, word)
}

pub fn is_diet(word: &str) -> bool {
    contains(DIETS, word)
}

pub fn is_pet(word: &str) -> bool {
    contains(PETS, word)
        || word
            .strip_suffix('s')
            .is_some_and(|one| contains(PETS, one))
}

pub fn is_partner(word: &str) -> bool {
    contains(PARTNERS, word)
}

/// A word for medicine, or one shaped like a drug's international name.
pub fn is_medicine(word: &str) -> bool {
    contains(MEDICINE_WORDS, word)
        || (word.len() >= 7
            && word.chars().all(|c| c.is_ascii_lowercase())
            && DRUG_ENDINGS.iter().any(|ending| word.ends_with(ending)))
}

/// The one name of a relation written several ways: "mom", "mum", "mommy" and "mother"
/// are "mother"; a relation with one spelling is itself.
pub fn canonical_relation(relation: &str) -> &str {
    match relation {
        "mom" | "mum" | "mommy" | "mummy" | "ma" | "mama" | "mamma" => "mother",
        "dad" | "daddy" | "pa" | "papa" | "pop" => "father",
        "grandma" | "granny" | "nana" => "grandmother",
        "grandpa" | "granddad" | "grandad" => "grandfather",
        "kid" | "child" => "child",
        "hubby" => "husband",
        "wifey" => "wife",
        "co-worker" | "coworker" => "colleague",
        "neighbour" => "neighbor",
        "fiancé" | "fiancee" | "fiancée" => "fiance",
        "co-founder" => "cofounder",
        "puppy" => "dog",
        "kitten" => "cat",
        other => other,
    }
}

/// Whether `relation` (canonical) belongs to the class a question names with a plural
/// or collective word: "my pets" holds the cat and the hamster, "my kids" the son and
/// the daughter.
pub fn in_class(class: &str, relation: &str) -> bool {
    let relation = canonical_relation(relation);
    match class {
        "pet" | "pets" | "animals" => is_pet(relation),
        "kids" | "children" | "child" => matches!(relation, "son" | "daughter" | "child"),
        "parents" | "parent" => matches!(relation, "mother" | "father" | "parent"),
        "siblings" | "sibling" => matches!(relation, "sister" | "brother" | "sibling"),
        "grandparents" => matches!(relation, "grandmother" | "grandfather"),
        "family" => matches!(
            relation,
            "mother"
                | "father"
                | "parent"
                | "sister"
                | "brother"
                | "sibling"
                | "son"
                | "daughter"
                | "child"
                | "wife"
                | "husband"
                | "spouse"
                | "partner"
                | "grandmother"
                | "grandfather"
                | "aunt"
                | "uncle"
                | "cousin"
                | "niece"
                | "nephew"
        ),
        "friends" => matches!(relation, "friend" | "best friend"),
        "colleagues" | "coworkers" | "team" => matches!(
            relation,
            "colleague" | "teammate" | "boss" | "manager" | "supervisor"
        ),
        _ => false,
    }
}

/// Plural and collective words a question uses for a class of relations.
pub fn is_relation_class(word: &str) -> bool {
    matches!(
        word,
        "pets"
            | "animals"
            | "kids"
            | "children"
            | "parents"
            | "siblings"
            | "grandparents"
            | "family"
            | "friends"
            | "colleagues"
            | "coworkers"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_sorted_for_binary_search() {
        for list in [
            OCCUPATIONS,
            PROGRAMMING_LANGUAGES,
            SPOKEN_LANGUAGES,
            TRANSIT,
            VEHICLES,
            DIETS,
            PETS,
            MEDICINE_WORDS,
            PARTNERS,
        ] {
            assert!(list.windows(2).all(|w| w[0] < w[1]), "{list:?}");
        }
    }

    #[test]
    fn drug_names_read_by_their_endings() {
        for drug in [
            "sertraline",
            "atorvastatin",
            "lisinopril",
            "amoxicillin",
            "ibuprofen",
        ] {
            assert!(is_medicine(drug), "{drug}");
        }
        for word in ["marathon", "pine", "vampire", "statistics", "kidney"] {
            assert!(!is_medicine(word), "{word}");
        }
    }

    #[test]
    fn relations_are_canonical_and_classed() {
        assert_eq!(canonical_relation("mom"), "mother");
        assert!(in_class("pets", "cat") && in_class("pets", "hamster"));
        assert!(in_class("kids", "daughter") && !in_class("kids", "wife"));
    }
}
