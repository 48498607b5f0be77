// byte_tokenizer.cpp — bytes in, bytes out; documents end with kEndOfDocument.
#include "data/byte_tokenizer.h"

namespace mt {

void ByteTokenizer::append_document(std::vector<int32_t>& out, const std::string& text) {
  out.reserve(out.size() + text.size() + 1);
  for (unsigned char ch : text) out.push_back(int32_t(ch));
  out.push_back(kEndOfDocument);
}

std::string ByteTokenizer::decode(const int32_t* ids, int64_t n) {
  std::string s;
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] >= 0 && ids[i] < 256)
      s.push_back(char(ids[i]));
    else if (ids[i] == kEndOfDocument)
      s += "\n<|eod|>\n";
  }
  return s;
}

}  // namespace mt
