// prose.h — seeded synthetic prose for the long-context task tests: paragraphs
// of sentences (3 to 14 words, capitalised, ending in . ! or ?) separated by
// blank lines, the shape of corpus text the passkey filler is cut from. No
// third-party text. Header-only.
#pragma once
#include <cstdint>
#include <string>

namespace mt::testing {

inline std::string prose(int paragraphs, uint64_t seed) {
  static const char* kWords[] = {"the",    "a",     "river", "stone",  "light",   "garden", "window", "morning",
                                 "quiet",  "green", "old",   "small",  "city",    "road",   "house",  "table",
                                 "letter", "music", "paper", "bright", "cold",    "warm",   "under",  "across",
                                 "seven",  "often", "never", "slowly", "between", "wind",   "field",  "number"};
  constexpr uint64_t kN = sizeof(kWords) / sizeof(kWords[0]);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  auto next = [&s] {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;  // xorshift64
    return s;
  };
  std::string out;
  for (int p = 0; p < paragraphs; ++p) {
    const int sentences = 3 + int(next() % 5);
    for (int k = 0; k < sentences; ++k) {
      const int words = 3 + int(next() % 12);
      std::string sentence;
      for (int w = 0; w < words; ++w) {
        if (w > 0) sentence += ' ';
        sentence += kWords[next() % kN];
      }
      sentence[0] = char(sentence[0] - 'a' + 'A');
      sentence += ".!?."[next() % 4];
      if (k > 0) out += ' ';
      out += sentence;
    }
    out += "\n\n";
  }
  return out;
}

}  // namespace mt::testing
