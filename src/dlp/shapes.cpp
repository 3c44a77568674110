#include "dlp/shapes.hpp"

#include <algorithm>
#include <array>

#include "dlp/validators.hpp"

namespace airlock::dlp::detail {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
bool is_alnum(char c) { return is_digit(c) || is_alpha(c); }
bool is_hex(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

std::size_t size_of(const RunView& run, std::size_t i) { return run.groups[i].size(); }

// A finding may start here: the run's own left edge (checked against the byte before it), or
// after a space inside the run ("ID 555-123-4567" inside "12 555-123-4567").
bool clean_left_edge(const RunView& run, std::size_t first_group, std::size_t start) {
  if (first_group == 0) return !is_alnum(run.byte_before(start));
  return run.separator_after(first_group - 1).find(' ') != std::string_view::npos;
}

bool clean_right_edge(const RunView& run, std::size_t last_group) {
  if (last_group + 1 == run.groups.size()) return !is_alnum(run.byte_at(run.end));
  return run.separator_after(last_group).find(' ') != std::string_view::npos;
}

// A group wrapped in parentheses: "(0)" in "+46 (0)8 ..." is the trunk prefix, not dialled.
bool in_parentheses(const RunView& run, std::size_t i) {
  char before = i == 0 ? run.byte_before(run.start) : run.separator_after(i - 1).back();
  char after = i + 1 < run.groups.size() ? run.separator_after(i).front() : run.byte_at(run.end);
  return before == '(' && after == ')';
}

// "x123" after the number.
bool has_extension(const RunView& run) {
  std::size_t n = run.groups.size();
  return n >= 2 && run.separator_after(n - 2) == "x" && size_of(run, n - 1) <= 5;
}

std::size_t count_digits(const RunView& run, std::size_t first, std::size_t last) {
  std::size_t digits = 0;
  for (std::size_t i = first; i <= last; ++i) digits += size_of(run, i);
  return digits;
}

int value_of(const RunView& run, std::size_t i) {
  int value = 0;
  for (std::size_t p = run.groups[i].start; p < run.groups[i].end; ++p) value = value * 10 + (run.data[p] - '0');
  return value;
}

// 2024-05-28, 28.05.2024, 05-28-2024: dates share the shape of short phone numbers.
bool starts_with_date(const RunView& run) {
  if (run.groups.size() < 3) return false;
  std::string_view s1 = run.separator_after(0), s2 = run.separator_after(1);
  if (s1 != s2 || (s1 != "-" && s1 != "." && s1 != "/")) return false;
  std::size_t a = size_of(run, 0), b = size_of(run, 1), c = size_of(run, 2);
  if (a == 4 && b <= 2 && c <= 2) {
    int year = value_of(run, 0);
    return year >= 1900 && year <= 2100 && value_of(run, 1) <= 12;
  }
  if (a <= 2 && b <= 2 && c == 4) {
    int year = value_of(run, 2);
    return year >= 1900 && year <= 2100 && value_of(run, 0) <= 31 && value_of(run, 1) <= 31;
  }
  return false;
}

// "17031 2202 Rissik St": a house number, not a phone number.
bool followed_by_street_type(const RunView& run) {
  static constexpr std::array<std::string_view, 16> kStreetTypes{
      "st", "street", "rd", "road", "ave", "avenue", "blvd", "boulevard", "rue", "lane",
      "ln", "dr", "drive", "way", "apt", "suite"};
  std::size_t i = run.end;
  while (run.byte_at(i) == ' ') ++i;
  // The word after the number, then possibly one more (a street name before its type).
  for (int word = 0; word < 2; ++word) {
    std::size_t start = i;
    char lower[12];
    std::size_t length = 0;
    while (is_alpha(run.byte_at(i)) && length < sizeof lower) {
      char c = run.byte_at(i++);
      lower[length++] = c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
    }
    if (i == start) return false;
    std::string_view w(lower, length);
    if (std::find(kStreetTypes.begin(), kStreetTypes.end(), w) != kStreetTypes.end()) return true;
    while (run.byte_at(i) == ' ') ++i;
  }
  return false;
}

bool is_card_grouping(const RunView& run, std::size_t first, std::size_t last) {
  std::size_t groups = last - first + 1;
  if (groups == 3 && size_of(run, first) == 4 && size_of(run, first + 1) == 6 &&
      (size_of(run, last) == 4 || size_of(run, last) == 5))
    return true;  // American Express 4-6-5, Diners Club 4-6-4
  for (std::size_t i = first; i < last; ++i)
    if (size_of(run, i) != 4) return false;
  std::size_t tail = size_of(run, last);
  return groups >= 3 && tail >= 1 && tail <= 7;
}

}  // namespace

void split_digit_groups(std::string_view data, std::size_t start, std::size_t end,
                        std::vector<DigitGroup>& groups) {
  groups.clear();
  std::size_t i = start;
  while (i < end) {
    while (i < end && !is_digit(data[i])) ++i;
    std::size_t group_start = i;
    while (i < end && is_digit(data[i])) ++i;
    if (i > group_start) groups.push_back({group_start, i});
  }
}

void match_ipv4(const RunView& run, std::vector<ShapeMatch>& out) {
  const std::size_t n = run.groups.size();
  for (std::size_t i = 0; i + 3 < n; ++i) {
    bool dotted = run.separator_after(i) == "." && run.separator_after(i + 1) == "." &&
                  run.separator_after(i + 2) == ".";
    if (!dotted) continue;
    // Not a piece of a longer dotted number (1.2.3.4.5) or of a word (v1.2.3.4).
    bool left_ok = i == 0 ? !is_alnum(run.byte_before(run.start)) && run.byte_before(run.start) != '.'
                          : run.separator_after(i - 1).find('.') == std::string_view::npos;
    bool right_ok = i + 4 == n ? !is_alnum(run.byte_at(run.end))
                               : run.separator_after(i + 3).find('.') == std::string_view::npos;
    if (left_ok && right_ok) out.push_back({run.groups[i].start, run.groups[i + 3].end});
  }
}

void match_credit_card(const RunView& run, std::vector<ShapeMatch>& out) {
  const std::size_t n = run.groups.size();
  // 12 or 13 digits are as often an order number as a card: they need a context word.
  auto delta_for = [](std::size_t digits) { return digits <= 13 ? -0.25 : 0.0; };
  // Unseparated: one group of 12 to 19 digits.
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t digits = size_of(run, i);
    if (digits < 12 || digits > 19) continue;
    bool left_ok = i == 0 ? !is_alnum(run.byte_before(run.start)) && run.byte_before(run.start) != '+'
                          : run.separator_after(i - 1) != ".";
    bool right_ok = i + 1 == n ? !is_alnum(run.byte_at(run.end)) : run.separator_after(i) != ".";
    if (left_ok && right_ok) out.push_back({run.groups[i].start, run.groups[i].end, delta_for(digits)});
  }
  // Separated: groups joined by one and the same separator, ' ' or '-'.
  std::size_t i = 0;
  while (i + 1 < n) {
    std::string_view separator = run.separator_after(i);
    if (separator != " " && separator != "-") {
      ++i;
      continue;
    }
    std::size_t j = i + 1;
    while (j + 1 < n && run.separator_after(j) == separator) ++j;
    // A dash binds the whole sequence; spaces may also separate a card from other numbers.
    const bool spaced = separator == " ";
    const std::size_t last_first = spaced ? j : i;
    for (std::size_t a = i; a <= last_first && a - i < 12; ++a) {
      for (std::size_t b = spaced ? a + 1 : j; b <= j && b - a < 8; ++b) {
        std::size_t digits = count_digits(run, a, b);
        if (digits < 12 || digits > 19 || !is_card_grouping(run, a, b)) continue;
        bool left_ok = a == 0 ? !is_alnum(run.byte_before(run.start)) : true;
        bool right_ok = b + 1 == n ? !is_alnum(run.byte_at(run.end)) : true;
        if (left_ok && right_ok)
          out.push_back({run.groups[a].start, run.groups[b].end, delta_for(digits)});
      }
    }
    i = j;
  }
}

void match_us_ssn(const RunView& run, std::vector<ShapeMatch>& out) {
  const std::size_t n = run.groups.size();
  for (std::size_t i = 0; i + 2 < n; ++i) {
    if (size_of(run, i) != 3 || size_of(run, i + 1) != 2 || size_of(run, i + 2) != 4) continue;
    std::string_view separator = run.separator_after(i);
    if (separator != run.separator_after(i + 1) || (separator != "-" && separator != " ")) continue;
    // Consistent separators and nothing attached: 123-45-6789-0 is something else.
    bool left_ok = i == 0 ? !is_alnum(run.byte_before(run.start))
                          : run.separator_after(i - 1) != separator &&
                                run.separator_after(i - 1).find('.') == std::string_view::npos;
    bool right_ok = i + 3 == n ? !is_alnum(run.byte_at(run.end))
                               : run.separator_after(i + 2) != separator &&
                                     run.separator_after(i + 2).find('.') == std::string_view::npos;
    if (left_ok && right_ok)
      out.push_back({run.groups[i].start, run.groups[i + 2].end, separator == " " ? -0.2 : 0.0});
  }
  // Nine bare digits: an SSN only when a context word says so.
  for (std::size_t i = 0; i < n; ++i) {
    if (size_of(run, i) != 9) continue;
    bool left_ok = i == 0 ? !is_alnum(run.byte_before(run.start)) : run.separator_after(i - 1) == " ";
    bool right_ok = i + 1 == n ? !is_alnum(run.byte_at(run.end)) : run.separator_after(i) == " ";
    if (left_ok && right_ok) out.push_back({run.groups[i].start, run.groups[i].end, -0.4});
  }
}

void match_phone_international(const RunView& run, std::vector<ShapeMatch>& out) {
  const std::size_t n = run.groups.size();
  if (n > 8) return;
  std::size_t start = run.start;
  std::size_t prefix_digits = 0;
  if (run.byte_before(run.start) == '+') {
    start = run.start - 1;
  } else if (size_of(run, 0) >= 3 && size_of(run, 0) <= 5 && run.data.substr(run.start, 2) == "00") {
    prefix_digits = 2;  // 00 is the international call prefix in most of the world
  } else {
    return;
  }
  if (is_alnum(run.byte_before(start)) || is_alnum(run.byte_at(run.end))) return;
  const bool extension = has_extension(run);
  const std::size_t last = extension ? n - 2 : n - 1;
  std::size_t digits = count_digits(run, 0, last) - prefix_digits;
  for (std::size_t i = 0; i <= last; ++i)
    if (size_of(run, i) == 1 && in_parentheses(run, i)) digits -= 1;
  if (digits < 8 || digits > 15) return;  // E.164: at most 15 digits
  out.push_back({start, run.end});
}

void match_phone_nanp(const RunView& run, std::vector<ShapeMatch>& out) {
  const std::size_t n = run.groups.size();
  auto separator_in = [](std::string_view s, std::initializer_list<std::string_view> allowed) {
    return std::find(allowed.begin(), allowed.end(), s) != allowed.end();
  };
  auto opens_parenthesis = [&](std::size_t i) {
    return i == 0 ? run.byte_before(run.start) == '(' : run.separator_after(i - 1).back() == '(';
  };
  // NPA NXX XXXX starting at group a, written "415-734-2219", "415.734.2219", "(415) 734-2219".
  auto area_exchange_line = [&](std::size_t a) {
    if (a + 2 >= n || size_of(run, a) != 3 || size_of(run, a + 1) != 3 || size_of(run, a + 2) != 4)
      return false;
    std::string_view s1 = run.separator_after(a), s2 = run.separator_after(a + 1);
    bool s1_ok = opens_parenthesis(a) ? separator_in(s1, {")", ") ", ")-", ")."})
                                      : separator_in(s1, {"-", ".", " "});
    return s1_ok && separator_in(s2, {"-", ".", " "});
  };
  for (std::size_t a = 0; a < n; ++a) {
    std::size_t last = 0;
    std::size_t start = run.groups[a].start;
    double delta = 0;
    if (area_exchange_line(a)) {
      last = a + 2;
      if (opens_parenthesis(a)) start -= 1;
    } else if (size_of(run, a) == 1 && run.data[start] == '1' && area_exchange_line(a + 1) &&
               separator_in(run.separator_after(a), {"-", ".", " ", " (", "("})) {
      last = a + 3;  // country code 1
    } else if (size_of(run, a) == 10 || (size_of(run, a) == 11 && run.data[start] == '1')) {
      last = a;  // bare digits: 4157342219
      delta = -0.35;
    } else {
      continue;
    }
    if (last + 1 < n && run.separator_after(last) == "x" && size_of(run, last + 1) <= 5)
      ++last;  // extension
    if (clean_left_edge(run, a, start) && clean_right_edge(run, last))
      out.push_back({start, run.groups[last].end, delta});
  }
}

void match_phone_national(const RunView& run, std::vector<ShapeMatch>& out) {
  const std::size_t n = run.groups.size();
  std::size_t start = run.start;
  if (run.byte_before(start) == '(') --start;
  char before = run.byte_before(start);
  if (is_alnum(before) || before == '+' || !clean_right_edge(run, n - 1)) return;
  const std::size_t main_groups = has_extension(run) ? n - 1 : n;
  if (main_groups < 2) return;
  const std::size_t digits = count_digits(run, 0, main_groups - 1);
  if (digits < 7 || digits > 13) return;
  bool all_dots = true;
  for (std::size_t i = 0; i < n; ++i) {
    if (size_of(run, i) > 8) return;
    if (i + 1 < main_groups) all_dots &= run.separator_after(i) == ".";
  }
  // Decimals (3.14159265) and dotted quads (versions, invalid addresses) are not phones.
  if (all_dots && (main_groups == 2 || main_groups == 4)) return;
  if (starts_with_date(run) || followed_by_street_type(run)) return;
  double delta = main_groups >= 3 && digits >= 9 ? 0.1 : 0.0;
  out.push_back({start, run.end, delta});
}

void match_ipv6(const RunView& run, std::vector<ShapeMatch>& out) {
  // A hex run may hold dashes (MAC, UUID); an address is a dash-free piece with "::" or seven
  // colons. Times ("02:16:07.507") are hex runs with colons too: one pass, no searching.
  std::size_t piece_start = run.start, colons = 0;
  bool double_colon = false;
  for (std::size_t i = run.start; i <= run.end; ++i) {
    char c = i < run.end ? run.data[i] : '-';
    if (c == ':') {
      double_colon |= i > run.start && run.data[i - 1] == ':';
      ++colons;
      continue;
    }
    if (c != '-') continue;
    bool left_ok = piece_start > run.start || !is_alnum(run.byte_before(piece_start));
    bool right_ok = i < run.end || !is_alnum(run.byte_at(i));
    if ((double_colon ? colons >= 2 : colons >= 7) && left_ok && right_ok)
      out.push_back({piece_start, i});
    piece_start = i + 1;
    colons = 0;
    double_colon = false;
  }
}

void match_mac_address(const RunView& run, std::vector<ShapeMatch>& out) {
  std::string_view text = run.text();
  if (is_alnum(run.byte_before(run.start)) || is_alnum(run.byte_at(run.end))) return;
  auto groups_of = [&](std::size_t width, char separator, std::size_t count) {
    if (text.size() != count * width + (count - 1)) return false;
    for (std::size_t i = 0; i < text.size(); ++i) {
      bool separator_position = (i + 1) % (width + 1) == 0;
      if (separator_position ? text[i] != separator : !is_hex(text[i])) return false;
    }
    return true;
  };
  if (groups_of(2, ':', 6) || groups_of(2, '-', 6) || groups_of(4, '.', 3))
    out.push_back({run.start, run.end});
}

void match_iban(const RunView& run, std::vector<ShapeMatch>& out) {
  const std::size_t start = run.start;
  const int length = iban_length_for_country(run.data.substr(start, 2));
  if (length == 0) return;
  // Groups of four, with single spaces between groups or none at all.
  int characters = 0;
  std::size_t i = start;
  int spaced = -1;  // unknown until after the first group
  while (characters < length) {
    char c = run.byte_at(i);
    if (is_alnum(c)) {
      ++characters;
      ++i;
    } else if (c == ' ' && characters % 4 == 0 && spaced != 0 && is_alnum(run.byte_at(i + 1))) {
      spaced = 1;
      ++i;
    } else {
      break;
    }
    if (characters == 4 && spaced == -1) spaced = run.byte_at(i) == ' ' ? 1 : 0;
  }
  if (characters != length || is_alnum(run.byte_at(i))) return;
  out.push_back({start, i});
}

void match_base64_run(const RunView& run, std::vector<ShapeMatch>& out) {
  std::string_view text = run.text();
  if (std::all_of(text.begin(), text.end(), is_hex)) return;  // the hex detector's
  // The body of a data: URI (an image, a font) is content, not a secret.
  if (run.start >= 7 && run.data.substr(run.start - 7, 7) == "base64,") return;
  std::size_t end = run.end;
  while (end < run.data.size() && end - run.end < 2 && run.data[end] == '=') ++end;
  out.push_back({run.start, end});
}

void match_hex_run(const RunView& run, std::vector<ShapeMatch>& out) {
  std::string_view text = run.text();
  if (std::all_of(text.begin(), text.end(), is_hex)) out.push_back({run.start, run.end});
}

}  // namespace airlock::dlp::detail
