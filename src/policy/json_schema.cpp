#include "policy/json_schema.hpp"

#include <re2/re2.h>

#include <map>
#include <set>
#include <unordered_map>

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

#include "common/utf8.hpp"
#include "policy/schema_internal.hpp"

namespace airlock::policy {
namespace {

using valijson::Subschema;
using valijson::ValidationResults;
using valijson::adapters::Adapter;
using valijson::adapters::NlohmannJsonAdapter;
using Context = std::vector<std::string>;

// The keywords taken away from valijson in one schema object; put back as RE2 constraints on
// the subschema that valijson parses from it, found by a marker in its `title`.
struct Takeover {
  std::string pattern;                               // "" if none
  std::string format;                                // date, time or date-time; "" if none
  bool unique_items = false;
  std::optional<std::uint64_t> min_length, max_length;  // minLength, maxLength
  std::vector<std::string> pattern_keys;             // patternProperties, in order
  std::set<std::string> property_names;              // `properties`: not "additional"
  std::optional<nlohmann::json> additional;          // additionalProperties, if taken over
};

constexpr const char* kMarker = "\x01" "airlock-takeover:";
constexpr const char* kMovedSchema = "\x01" "airlock-moved:";  // a moved subschema's key

std::string moved_key(std::size_t takeover, std::size_t index) {
  return std::string(kMovedSchema) + std::to_string(takeover) + ":" + std::to_string(index);
}

std::shared_ptr<const RE2> compile_re2(const std::string& pattern) {
  RE2::Options options;
  options.set_log_errors(false);
  auto re = std::make_shared<const RE2>(pattern, options);
  if (!re->ok()) throw std::runtime_error("pattern '" + pattern + "': " + re->error());
  return re;
}

void push_error(ValidationResults* results, const Context& context, const std::string& what) {
  if (results) results->pushError(context, what);
}

// A value against a subschema, from inside a constraint (the target's adapter is the concrete
// NlohmannJsonAdapter: valijson builds children with the type it was called with).
bool validate_child(const Adapter& value, const Subschema& schema, const Context& context,
                    ValidationResults* results) {
  const auto* concrete = dynamic_cast<const NlohmannJsonAdapter*>(&value);
  if (!concrete) {
    push_error(results, context, "internal error: a value of an unexpected adapter type");
    return false;
  }
  std::unordered_map<std::string, std::regex> no_regexes;  // none are left to valijson
  valijson::ValidationVisitor<NlohmannJsonAdapter> visitor(*concrete, context, true, results,
                                                           no_regexes);
  return visitor.validateSchema(schema);
}

// Boilerplate of valijson's PolyConstraint: copies made by placement new.
template <typename Self>
class CopyablePoly : public valijson::constraints::PolyConstraint {
 private:
  Constraint* cloneInto(void* where) const override {
    return new (where) Self(static_cast<const Self&>(*this));
  }
  size_t sizeOf() const override { return sizeof(Self); }
};

// `pattern`: a search (unanchored, as ECMA-262's test()), RE2.
class Re2Pattern : public CopyablePoly<Re2Pattern> {
 public:
  explicit Re2Pattern(const std::string& pattern) : re_(compile_re2(pattern)) {}
  bool validate(const Adapter& target, const Context& context,
                ValidationResults* results) const override {
    if (!target.isString() || RE2::PartialMatch(target.asString(), *re_)) return true;
    push_error(results, context, "does not match the pattern '" + re_->pattern() + "'");
    return false;
  }

 private:
  std::shared_ptr<const RE2> re_;
};

bool day_in_month(int month, int day) {
  static const int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return month >= 1 && month <= 12 && day >= 1 && day <= kDays[month - 1];
}

// `format`: date, time and date-time as valijson checks them (its regexes), in RE2.
class Re2Format : public CopyablePoly<Re2Format> {
 public:
  explicit Re2Format(std::string format) : format_(std::move(format)) {}
  bool validate(const Adapter& target, const Context& context,
                ValidationResults* results) const override {
    if (!target.isString() || valid(target.asString())) return true;
    push_error(results, context, "is not a valid " + format_);
    return false;
  }

 private:
  bool valid(const std::string& s) const {
    static const RE2 date("([0-9]+)-(0[1-9]|1[012])-(0[1-9]|[12][0-9]|3[01])");
    static const RE2 time(
        "([01][0-9]|2[0-3]):([0-5][0-9]):([0-5][0-9]|60)(\\.[0-9]+)?"
        "(([Zz])|([\\+|\\-]([01][0-9]|2[0-3]):[0-5][0-9]))");
    static const RE2 date_time("([0-9]+)-(0[1-9]|1[012])-(0[1-9]|[12][0-9]|3[01])[Tt]" +
                               time.pattern());
    int month = 0, day = 0;
    if (format_ == "time") return RE2::FullMatch(s, time);
    const RE2& re = format_ == "date" ? date : date_time;
    return RE2::FullMatch(s, re, static_cast<void*>(nullptr), &month, &day) &&
           day_in_month(month, day);
  }
  std::string format_;
};

// `patternProperties` (RE2) and, with it, `additionalProperties` of the same object.
class Re2PatternProperties : public CopyablePoly<Re2PatternProperties> {
 public:
  struct Pattern {
    std::shared_ptr<const RE2> re;
    const Subschema* schema;
  };
  Re2PatternProperties(std::vector<Pattern> patterns, std::set<std::string> names,
                       std::optional<bool> additional_allowed, const Subschema* additional)
      : patterns_(std::move(patterns)),
        names_(std::make_shared<const std::set<std::string>>(std::move(names))),
        additional_allowed_(additional_allowed),
        additional_(additional) {}

  bool validate(const Adapter& target, const Context& context,
                ValidationResults* results) const override {
    if (!target.isObject()) return true;
    bool ok = true;
    target.applyToObject([&](const std::string& key, const Adapter& value) {
      Context at = context;
      at.push_back("[" + key + "]");
      ok = validate_member(key, value, at, results) && ok;
      return ok || results;  // without results, the first error ends it (as valijson does)
    });
    return ok;
  }

 private:
  bool validate_member(const std::string& key, const Adapter& value, const Context& at,
                       ValidationResults* results) const {
    bool matched = names_->count(key) > 0, ok = true;
    for (const auto& p : patterns_)
      if (RE2::PartialMatch(key, *p.re)) {
        matched = true;
        ok = validate_child(value, *p.schema, at, results) && ok;
      }
    if (matched) return ok;
    if (additional_) return validate_child(value, *additional_, at, results);
    if (additional_allowed_.value_or(true)) return true;
    push_error(results, at, "is not allowed (additionalProperties is false)");
    return false;
  }

  std::vector<Pattern> patterns_;
  std::shared_ptr<const std::set<std::string>> names_;
  std::optional<bool> additional_allowed_;  // additionalProperties true/false; null: a schema
  const Subschema* additional_;
};

// A value as a string that is equal for equal JSON values (1 and 1.0 alike; object members are
// in key order already): uniqueItems by hashing instead of comparing every pair.
void append_canonical(const Adapter& v, std::string& out) {
  if (v.isObject()) {
    out += '{';
    v.applyToObject([&](const std::string& key, const Adapter& member) {
      out += std::to_string(key.size()) + ':' + key;
      append_canonical(member, out);
      return true;
    });
    out += '}';
  } else if (v.isArray()) {
    out += '[';
    v.applyToArray([&](const Adapter& item) { return append_canonical(item, out), true; });
    out += ']';
  } else if (v.isString()) {
    const std::string str = v.asString();
    out += 's' + std::to_string(str.size()) + ':' + str;
  } else if (v.isInteger()) {
    out += 'n' + std::to_string(v.getInteger()) + ';';
  } else if (v.isDouble()) {
    double d = v.getDouble();  // in range before the cast: out of range it is undefined
    bool integral =
        d > -9.2e18 && d < 9.2e18 && d == static_cast<double>(static_cast<std::int64_t>(d));
    out += 'n';
    out += integral ? std::to_string(static_cast<std::int64_t>(d)) : nlohmann::json(d).dump();
    out += ';';
  } else if (v.isBool()) {
    out += v.getBool() ? 't' : 'f';
  } else {
    out += 'z';
  }
}

// `uniqueItems`: valijson compares every pair (quadratic, and with an error for each equal
// pair); this is linear in the array's size.
class UniqueItems : public CopyablePoly<UniqueItems> {
 public:
  bool validate(const Adapter& target, const Context& context,
                ValidationResults* results) const override {
    if (!target.isArray()) return true;
    std::unordered_map<std::string, std::size_t> seen;
    std::size_t index = 0;
    bool unique = true;
    target.applyToArray([&](const Adapter& item) {
      std::string key;
      append_canonical(item, key);
      auto [it, fresh] = seen.emplace(std::move(key), index);
      if (!fresh && unique) {
        push_error(results, context, "items #" + std::to_string(it->second) + " and #" +
                                         std::to_string(index) + " are equal (uniqueItems)");
        unique = false;
      }
      ++index;
      return unique;
    });
    return unique;
  }
};

// `minLength` and `maxLength`: valijson counts the characters of a copy a byte at a time (most
// of check_input's time on a 1 MiB argument) and stops at the first NUL byte, so a string that
// begins with "\u0000" passed any maxLength. Here every character counts, 8 bytes at a time.
class StringLength : public CopyablePoly<StringLength> {
 public:
  StringLength(std::optional<std::uint64_t> min, std::optional<std::uint64_t> max) : min_(min), max_(max) {}
  bool validate(const Adapter& target, const Context& context,
                ValidationResults* results) const override {
    if (!target.isString()) return true;
    const std::uint64_t length = count_utf8_characters(target.asString());
    if (max_ && length > *max_) {
      push_error(results, context, "String should be no more than " + std::to_string(*max_) +
                                       " characters in length.");
      return false;
    }
    if (min_ && length < *min_) {
      push_error(results, context, "String should be no fewer than " + std::to_string(*min_) +
                                       " characters in length.");
      return false;
    }
    return true;
  }

 private:
  std::optional<std::uint64_t> min_, max_;
};

// A length keyword's value, taken out of `node` when it is a non-negative integer (valijson
// keeps anything else, and refuses it as it did).
std::optional<std::uint64_t> take_length(nlohmann::json& node, const char* keyword) {
  if (!node.contains(keyword) || !node[keyword].is_number_integer()) return std::nullopt;
  if (!node[keyword].is_number_unsigned() && node[keyword].get<std::int64_t>() < 0) return std::nullopt;
  const auto value = node[keyword].get<std::uint64_t>();
  node.erase(keyword);
  return value;
}

// Takes pattern, format and patternProperties out of every schema object of `schema`; the
// moved-out subschemas go under `properties` with keys no real property has, so that valijson
// parses them (and resolves their $refs) in place.
std::vector<Takeover> take_over(nlohmann::json& schema) {
  std::vector<Takeover> takeovers;
  detail::for_each_schema(schema, "", [&](nlohmann::json& node, const std::string&) {
    Takeover t;
    if (node.contains("pattern") && node["pattern"].is_string()) t.pattern = node["pattern"];
    if (node.contains("format") && node["format"].is_string()) {
      std::string f = node["format"];
      if (f == "date" || f == "time" || f == "date-time") t.format = f;
    }
    t.unique_items = node.contains("uniqueItems") && node["uniqueItems"] == true;
    t.min_length = take_length(node, "minLength");
    t.max_length = take_length(node, "maxLength");
    node.erase("uniqueItems");
    node.erase("pattern");
    node.erase("format");  // valijson casts any value with a format to a string, and throws
    if (node.contains("patternProperties")) {
      nlohmann::json moved = std::move(node["patternProperties"]);
      node.erase("patternProperties");
      if (node.contains("properties"))
        for (const auto& [name, value] : node["properties"].items()) t.property_names.insert(name);
      std::size_t index = 0;
      for (auto& [key, value] : moved.items()) {
        t.pattern_keys.push_back(key);
        node["properties"][moved_key(takeovers.size(), index++)] = std::move(value);
      }
      if (node.contains("additionalProperties")) {
        t.additional = std::move(node["additionalProperties"]);
        node.erase("additionalProperties");
        if (t.additional->is_object()) node["properties"][moved_key(takeovers.size(), index)] =
                                           *t.additional;
      }
    }
    if (t.pattern.empty() && t.format.empty() && t.pattern_keys.empty() && !t.unique_items &&
        !t.min_length && !t.max_length)
      return;
    node["title"] = kMarker + std::to_string(takeovers.size());
    takeovers.push_back(std::move(t));
  });
  return takeovers;
}

// Every subschema valijson parsed, reached from the root through every constraint's children
// (iteratively, and each once: `$ref`s can make cycles).
class SubschemaFinder : public valijson::constraints::ConstraintVisitor {
 public:
  std::vector<const Subschema*> all(const Subschema& root) {
    push(&root);
    while (!todo_.empty()) {
      const Subschema* s = todo_.back();
      todo_.pop_back();
      s->applyStrict(visit_);
    }
    return found_;
  }
  // The subschemas moved under `properties` by take_over(), by their key.
  std::map<std::string, const Subschema*> moved;

 private:
  using C = valijson::constraints::Constraint;
  std::function<bool(const C&)> visit_ = [this](const C& c) { return c.accept(*this) || true; };

  void push(const Subschema* s) {
    if (s && seen_.insert(s).second) {
      todo_.push_back(s);
      found_.push_back(s);
    }
  }
  template <typename T>
  bool each(const T& c) {
    c.applyToSubschemas([this](unsigned, const Subschema* s) { return push(s), true; });
    return true;
  }

#define AIRLOCK_LEAF(T) \
  bool visit(const valijson::constraints::T&) override { return true; }
  AIRLOCK_LEAF(ConstConstraint)
  AIRLOCK_LEAF(EnumConstraint)
  AIRLOCK_LEAF(FormatConstraint)
  AIRLOCK_LEAF(MaximumConstraint)
  AIRLOCK_LEAF(MaxItemsConstraint)
  AIRLOCK_LEAF(MaxLengthConstraint)
  AIRLOCK_LEAF(MaxPropertiesConstraint)
  AIRLOCK_LEAF(MinimumConstraint)
  AIRLOCK_LEAF(MinItemsConstraint)
  AIRLOCK_LEAF(MinLengthConstraint)
  AIRLOCK_LEAF(MinPropertiesConstraint)
  AIRLOCK_LEAF(MultipleOfDoubleConstraint)
  AIRLOCK_LEAF(MultipleOfIntConstraint)
  AIRLOCK_LEAF(PatternConstraint)
  AIRLOCK_LEAF(PolyConstraint)
  AIRLOCK_LEAF(RequiredConstraint)
  AIRLOCK_LEAF(UniqueItemsConstraint)
#undef AIRLOCK_LEAF
  bool visit(const valijson::constraints::AllOfConstraint& c) override { return each(c); }
  bool visit(const valijson::constraints::AnyOfConstraint& c) override { return each(c); }
  bool visit(const valijson::constraints::OneOfConstraint& c) override { return each(c); }
  bool visit(const valijson::constraints::ConditionalConstraint& c) override {
    push(c.getIfSubschema());
    push(c.getThenSubschema());
    push(c.getElseSubschema());
    return true;
  }
  bool visit(const valijson::constraints::ContainsConstraint& c) override {
    return push(c.getSubschema()), true;
  }
  bool visit(const valijson::constraints::NotConstraint& c) override {
    return push(c.getSubschema()), true;
  }
  bool visit(const valijson::constraints::PropertyNamesConstraint& c) override {
    return push(c.getSubschema()), true;
  }
  bool visit(const valijson::constraints::SingularItemsConstraint& c) override {
    return push(c.getItemsSubschema()), true;
  }
  bool visit(const valijson::constraints::DependenciesConstraint& c) override {
    c.applyToSchemaDependencies([this](const auto&, const Subschema* s) { return push(s), true; });
    return true;
  }
  bool visit(const valijson::constraints::LinearItemsConstraint& c) override {
    c.applyToItemSubschemas([this](unsigned, const Subschema* s) { return push(s), true; });
    return push(c.getAdditionalItemsSubschema()), true;
  }
  bool visit(const valijson::constraints::PropertiesConstraint& c) override {
    auto add = [this](const auto& name, const Subschema* s) {
      if (std::string(name.c_str()).rfind(kMovedSchema, 0) == 0) moved[name.c_str()] = s;
      return push(s), true;
    };
    c.applyToProperties(add);
    c.applyToPatternProperties(add);
    return push(c.getAdditionalPropertiesSubschema()), true;
  }
  bool visit(const valijson::constraints::TypeConstraint& c) override {
    c.applyToSchemaTypes([this](unsigned, const Subschema* s) { return push(s), true; });
    return true;
  }

  std::vector<const Subschema*> todo_, found_;
  std::set<const Subschema*> seen_;
};

const Subschema* moved_schema(const SubschemaFinder& finder, std::size_t t, std::size_t i) {
  auto it = finder.moved.find(moved_key(t, i));
  if (it == finder.moved.end()) throw std::runtime_error("internal error: a moved subschema");
  return it->second;
}

void attach(valijson::Schema& schema, const Subschema* at, const Takeover& t, std::size_t id,
            const SubschemaFinder& finder) {
  if (!t.pattern.empty()) schema.addConstraintToSubschema(Re2Pattern(t.pattern), at);
  if (!t.format.empty()) schema.addConstraintToSubschema(Re2Format(t.format), at);
  if (t.unique_items) schema.addConstraintToSubschema(UniqueItems(), at);
  if (t.min_length || t.max_length) schema.addConstraintToSubschema(StringLength(t.min_length, t.max_length), at);
  if (t.pattern_keys.empty()) return;
  std::vector<Re2PatternProperties::Pattern> patterns;
  for (std::size_t i = 0; i < t.pattern_keys.size(); ++i)
    patterns.push_back({compile_re2(t.pattern_keys[i]), moved_schema(finder, id, i)});
  std::optional<bool> allowed;
  const Subschema* additional = nullptr;
  if (t.additional && t.additional->is_boolean()) allowed = t.additional->get<bool>();
  if (t.additional && t.additional->is_object())
    additional = moved_schema(finder, id, t.pattern_keys.size());
  schema.addConstraintToSubschema(
      Re2PatternProperties(std::move(patterns), t.property_names, allowed, additional), at);
}

// The RE2 constraints, on the subschemas valijson made of the marked schema objects.
void attach_takeovers(valijson::Schema& schema, const std::vector<Takeover>& takeovers) {
  SubschemaFinder finder;
  auto subschemas = finder.all(schema);
  for (const Subschema* s : subschemas) {
    if (!s->hasTitle() || s->getTitle().rfind(kMarker, 0) != 0) continue;
    std::size_t id = std::stoul(s->getTitle().substr(std::string(kMarker).size()));
    attach(schema, s, takeovers.at(id), id, finder);
  }
}

std::size_t depth_of(const nlohmann::json& value, std::size_t limit) {
  if (!value.is_structured() || limit == 0) return 0;
  std::size_t deepest = 0;
  for (const auto& child : value) deepest = std::max(deepest, depth_of(child, limit - 1));
  return deepest + 1;
}

}  // namespace

struct JsonSchema::Impl {
  nlohmann::json document;  // the rewritten schema; valijson's adapter refers into it
  valijson::Schema schema;
};

JsonSchema::Compiled JsonSchema::compile(const nlohmann::json& schema) {
  if (depth_of(schema, detail::kMaxSchemaDepth + 1) > detail::kMaxSchemaDepth)
    return {nullptr, {{"", "nested deeper than " + std::to_string(detail::kMaxSchemaDepth) +
                               " levels"}}};
  auto problems = detail::check_against_meta_schema(schema);
  for (auto& p : detail::check_refs(schema)) problems.push_back(std::move(p));
  for (auto& p : detail::check_patterns(schema)) problems.push_back(std::move(p));
  if (problems.empty())  // loops are looked for when every reference resolves
    for (auto& p : detail::check_ref_cycles(schema)) problems.push_back(std::move(p));
  if (!problems.empty()) return {nullptr, std::move(problems)};
  auto impl = std::make_shared<Impl>();
  impl->document = schema;
  try {
    auto takeovers = take_over(impl->document);
    valijson::SchemaParser parser;
    NlohmannJsonAdapter adapter(impl->document);
    parser.populateSchema(adapter, impl->schema);
    attach_takeovers(impl->schema, takeovers);
  } catch (const std::exception& e) {
    return {nullptr, {{"", std::string("not a usable JSON Schema: ") + e.what()}}};
  }
  auto compiled = std::make_shared<JsonSchema>();
  compiled->impl = std::move(impl);
  return {std::move(compiled), {}};
}

std::optional<std::pair<std::string, std::string>> JsonSchema::check(
    const nlohmann::json& value) const {
  valijson::Validator validator;
  ValidationResults results;
  NlohmannJsonAdapter target(value);
  try {
    if (validator.validate(impl->schema, target, &results)) return std::nullopt;
  } catch (const std::exception& e) {  // fail closed
    return std::make_pair(std::string("/"), std::string("cannot be checked: ") + e.what());
  }
  // The deepest error says most about what is wrong.
  ValidationResults::Error error, best;
  std::size_t depth = 0;
  while (results.popError(error))
    if (error.context.size() >= depth) {
      depth = error.context.size();
      best = error;
    }
  std::string pointer = detail::context_pointer(best.context);
  return std::make_pair(pointer.empty() ? "/" : pointer, best.description);
}

}  // namespace airlock::policy
