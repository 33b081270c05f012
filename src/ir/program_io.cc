// Program text/binary/file I/O through the protobuf file format. Parsing never trusts its input:
// syntax errors come back through an error collector (with line and column), binary input through
// ParsePartial (protobuf's own recursion limit bounds nesting), and structure through from_proto.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/message.h>
#include <google/protobuf/stubs/common.h>

#include <fstream>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "chanflow/core/error.h"
#include "ir_internal.h"

namespace chanflow {
namespace {

namespace pb = ::chanflow::ir::pb;

// Keeps the first error protobuf reports, with its 1-based position.
class FirstErrorCollector final : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (!has_error_) {
      has_error_ = true;
      line_ = line;
      column_ = column;
      message_ = message;
    }
  }
  void AddWarning(int, google::protobuf::io::ColumnNumber, const std::string&) override {}

  bool has_error() const { return has_error_; }
  void reset() {
    has_error_ = false;
    line_ = -1;
    column_ = -1;
    message_.clear();
  }
  std::string describe(std::string_view source) const {
    std::ostringstream os;
    os << source;
    if (line_ >= 0) os << ':' << (line_ + 1) << ':' << (column_ + 1);
    os << ": " << message_;
    return os.str();
  }

 private:
  bool has_error_ = false;
  int line_ = -1;
  int column_ = -1;
  std::string message_;
};

enum class FileFormat { kText, kBinary };

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

FileFormat format_of(const std::string& path) {
  for (std::string_view ext : {".pbtxt", ".prototxt", ".txt"}) {
    if (ends_with(path, ext)) return FileFormat::kText;
  }
  for (std::string_view ext : {".pb", ".bin"}) {
    if (ends_with(path, ext)) return FileFormat::kBinary;
  }
  throw Error("program file '" + path +
              "': unknown extension (use .pbtxt for the text format or .pb for the binary "
              "format)");
}

// Every string of a program is text (names, op types, string attributes) and must be UTF-8: JSON,
// the third format a program saves to, holds only Unicode. Protobuf does not check proto2 string
// fields, so a binary file (or a text file with octal escapes) may carry any bytes. Throws
// ProgramError naming the field, e.g. "blocks[0].vars[2].name".
void check_utf8(const google::protobuf::Message& m, const std::string& path,
                std::string_view source) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection* r = m.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r->ListFields(m, &fields);
  for (const FieldDescriptor* f : fields) {
    const std::string at = path.empty() ? f->name() : path + "." + f->name();
    const int n = f->is_repeated() ? r->FieldSize(m, f) : 1;
    for (int i = 0; i < n; ++i) {
      const std::string where = f->is_repeated() ? at + "[" + std::to_string(i) + "]" : at;
      if (f->type() == FieldDescriptor::TYPE_STRING) {
        std::string scratch;
        const std::string& v = f->is_repeated() ? r->GetRepeatedStringReference(m, f, i, &scratch)
                                                : r->GetStringReference(m, f, &scratch);
        if (!google::protobuf::internal::IsStructurallyValidUTF8(v.data(),
                                                                 static_cast<int>(v.size()))) {
          throw ProgramError(std::string(source) + ": " + where +
                             ": the string is not valid UTF-8 (program text must be Unicode)");
        }
      } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        check_utf8(f->is_repeated() ? r->GetRepeatedMessage(m, f, i) : r->GetMessage(m, f), where,
                   source);
      }
    }
  }
}

[[noreturn]] void too_large(std::string_view source, std::uint64_t max_bytes) {
  throw LimitError(std::string(source) + ": the program is larger than the limit of " +
                       std::to_string(max_bytes) +
                       " bytes (max_bytes; `chanflow` sets it with --max-program-size)",
                   "max_bytes");
}

// A stream's bytes for protobuf's parser, at most `max_bytes` of them: past that it ends the input
// and remembers why (the parse then fails or stops, and the caller reports the bound).
class BoundedInput final : public google::protobuf::io::ZeroCopyInputStream {
 public:
  BoundedInput(std::istream& in, std::uint64_t max_bytes) : in_(&in), max_bytes_(max_bytes) {}
  bool Next(const void** data, int* size) override {
    if (over_ || !in_.Next(data, size)) return false;
    read_ += static_cast<std::uint64_t>(*size);
    if (read_ > max_bytes_) {
      over_ = true;
      return false;
    }
    return true;
  }
  void BackUp(int count) override {
    in_.BackUp(count);
    read_ -= static_cast<std::uint64_t>(count);
  }
  bool Skip(int count) override {
    const void* data = nullptr;
    int size = 0;
    while (count > 0) {
      if (!Next(&data, &size)) return false;
      if (size > count) {
        BackUp(size - count);
        return true;
      }
      count -= size;
    }
    return true;
  }
  int64_t ByteCount() const override { return static_cast<int64_t>(read_); }
  bool over() const { return over_; }
  std::uint64_t max_bytes() const { return max_bytes_; }

 private:
  google::protobuf::io::IstreamInputStream in_;
  std::uint64_t max_bytes_;
  std::uint64_t read_ = 0;
  bool over_ = false;
};

// Parses the text of `input` into `desc` (and the position of every field into `info`, when
// given); throws ProgramError at the first syntax error, with its line and column.
void parse_text(google::protobuf::io::ZeroCopyInputStream& input, std::string_view source,
                pb::ProgramDesc& desc, google::protobuf::TextFormat::ParseInfoTree* info) {
  FirstErrorCollector errors;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (info != nullptr) parser.WriteLocationsTo(info);
  parser.AllowPartialMessage(true);
  const bool ok = parser.Parse(&input, &desc) && !errors.has_error();
  const auto* bound = dynamic_cast<const BoundedInput*>(&input);
  if (bound != nullptr && bound->over()) too_large(source, bound->max_bytes());
  if (!ok) {
    if (errors.has_error()) throw ProgramError(errors.describe(source));
    throw ProgramError(std::string(source) + ": not a valid program in the text format");
  }
  check_utf8(desc, "", source);
}

// Gives the heap's free pages back to the system. The parsed message was freed piece by piece
// among the objects made from it; glibc keeps such memory resident until trimmed, and it would
// count again in the peak when the program is verified and prepared next.
void trim_heap() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

// The text format one message at a time. Parsed whole, a program's message takes about 3x its
// text, and its pieces, freed as they are converted, leave the heap too fragmented for the
// objects and the prepared program that follow (4.4x the text at the peak). This reader splits
// the text into the scalar fields of each block and its `vars { ... }` / `ops { ... }` messages,
// parses each of those alone with protobuf's parser and hands it to the assembler, so that only
// the objects grow with the program.
//
// It handles the shape every writer produces (`blocks { idx: 0 ... vars { ... } ops { ... } }`,
// with `:` before a message, `<...>` delimiters, comments and `;`/`,` separators allowed); any
// other shape (list syntax, extensions, a field it does not know) and every error make it give
// up, and the caller parses the input whole, which reports errors with their positions exactly.
// Streaming therefore needs an input that can be read again.
class StreamingTextReader {
 public:
  StreamingTextReader(google::protobuf::io::ZeroCopyInputStream& in, std::string_view source)
      : in_(in), assembler_(source, nullptr) {
    parser_.AllowPartialMessage(true);
    parser_.RecordErrorsTo(&errors_);
  }

  // The program, or nullopt when the input must be parsed whole instead. Throws LimitError when
  // the input is over its bound.
  std::optional<Program> read() {
    try {
      while (true) {
        skip_filler();
        if (at_end()) break;
        if (read_identifier() != "blocks") return std::nullopt;
        const int close = open_message();
        if (close < 0 || !read_block(close)) return std::nullopt;
      }
      return assembler_.finish();
    } catch (const ProgramError&) {
      return std::nullopt;  // a structural error: the whole parse reports it with its line
    }
  }
  // Whether the input ended because it is over its bound.
  const BoundedInput* bound() const { return dynamic_cast<const BoundedInput*>(&in_); }

 private:
  static constexpr int kEnd = -1;

  int peek() {
    while (pos_ == size_) {
      if (ended_) return kEnd;
      const void* data = nullptr;
      int size = 0;
      if (!in_.Next(&data, &size)) {
        ended_ = true;
        return kEnd;
      }
      chunk_ = static_cast<const char*>(data);
      pos_ = 0;
      size_ = size;
    }
    return static_cast<unsigned char>(chunk_[pos_]);
  }
  int get() {
    const int c = peek();
    if (c != kEnd) ++pos_;
    return c;
  }
  bool at_end() { return peek() == kEnd; }
  static bool is_space(int c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
  }
  static bool is_ident(int c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  }
  // Skips white space, comments and the optional field separators.
  void skip_filler() {
    for (int c = peek(); c != kEnd; c = peek()) {
      if (c == '#') {
        while (c != kEnd && c != '\n') c = get();
      } else if (is_space(c) || c == ';' || c == ',') {
        get();
      } else {
        return;
      }
    }
  }
  void skip_space() {
    while (true) {
      const int c = peek();
      if (c == '#') {
        for (int d = get(); d != kEnd && d != '\n';) d = get();
      } else if (is_space(c)) {
        get();
      } else {
        return;
      }
    }
  }
  std::string read_identifier() {
    std::string id;
    while (is_ident(peek())) id.push_back(static_cast<char>(get()));
    return id;
  }
  // After a message field's name: an optional ':', then '{' or '<'. The matching closing
  // character, or -1.
  int open_message() {
    skip_space();
    if (peek() == ':') {
      get();
      skip_space();
    }
    const int open = get();
    if (open == '{') return '}';
    if (open == '<') return '>';
    return -1;
  }
  // The text of a message up to its closing character (consumed, not included), strings and
  // comments kept whole. False when the input ends first.
  bool read_body(std::string& body) {
    body.clear();
    int depth = 1;
    while (true) {
      const int c = get();
      if (c == kEnd) return false;
      if (c == '"' || c == '\'') {
        body.push_back(static_cast<char>(c));
        for (int d = get();; d = get()) {
          if (d == kEnd || d == '\n') return false;  // strings do not span lines
          body.push_back(static_cast<char>(d));
          if (d == '\\') {
            const int e = get();
            if (e == kEnd) return false;
            body.push_back(static_cast<char>(e));
          } else if (d == c) {
            break;
          }
        }
        continue;
      }
      if (c == '#') {
        for (int d = get(); d != kEnd && d != '\n';) d = get();
        body.push_back('\n');
        continue;
      }
      if (c == '{' || c == '<') ++depth;
      if ((c == '}' || c == '>') && --depth == 0) return true;
      body.push_back(static_cast<char>(c));
    }
  }
  template <typename Message>
  bool parse(const std::string& text, Message& m) {
    m.Clear();
    errors_.reset();
    return parser_.ParseFromString(text, &m) && !errors_.has_error() && utf8(m);
  }
  static bool utf8(const google::protobuf::Message& m) {
    try {
      check_utf8(m, "", "");
    } catch (const ProgramError&) {
      return false;
    }
    return true;
  }
  // A block's fields up to `close`. False when the block must be parsed whole.
  bool read_block(int close) {
    assembler_.begin_block();
    header_.clear();
    while (true) {
      skip_filler();
      if (peek() == close) {
        get();
        break;
      }
      const std::string field = read_identifier();
      if (field == "idx" || field == "parent_idx" || field == "forward_block_idx") {
        // A scalar: kept as text and parsed with the block's other scalars below.
        header_ += field;
        skip_space();
        if (get() != ':') return false;
        header_ += ": ";
        skip_space();
        for (int c = peek();
             c != kEnd && !is_space(c) && c != ';' && c != ',' && c != '#' && c != '}' && c != '>';
             c = peek()) {
          header_.push_back(static_cast<char>(get()));
        }
        header_.push_back('\n');
      } else if (field == "vars" || field == "ops") {
        if (open_message() < 0 || !read_body(body_)) return false;
        if (field == "vars") {
          if (!parse(body_, var_)) return false;
          assembler_.add_var(var_);
        } else {
          if (!parse(body_, op_)) return false;
          assembler_.add_op(op_);
        }
      } else {
        return false;
      }
    }
    pb::BlockDesc header;
    if (!parse(header_, header)) return false;
    assembler_.end_block(header);
    return true;
  }

  google::protobuf::io::ZeroCopyInputStream& in_;
  const char* chunk_ = nullptr;
  int pos_ = 0;
  int size_ = 0;
  bool ended_ = false;
  ir_detail::ProgramAssembler assembler_;
  google::protobuf::TextFormat::Parser parser_;
  FirstErrorCollector errors_;
  std::string header_;
  std::string body_;
  pb::VarDesc var_;
  pb::OpDesc op_;
};

// Reads the text format. `open(pass)` returns the input from its start for pass 0, 1, 2, or null
// when it cannot be read again. When `rewindable`, pass 0 streams (StreamingTextReader); if that
// gives up, the input is parsed whole in the next pass without field positions (which cost
// several times the text in memory), and once more with them only to report a structural error
// with its line.
template <typename Open>
Program parse_text(std::string_view source, bool rewindable, Open&& open) {
  int pass = 0;
  if (rewindable) {
    google::protobuf::io::ZeroCopyInputStream* input = open(pass++);
    StreamingTextReader reader(*input, source);
    std::optional<Program> p = reader.read();
    const BoundedInput* bound = reader.bound();
    if (bound != nullptr && bound->over()) too_large(source, bound->max_bytes());
    if (p.has_value()) return *std::move(p);
  }
  std::optional<ProgramError> error;
  {
    pb::ProgramDesc desc;
    parse_text(*open(pass++), source, desc, nullptr);
    try {
      Program p = ir_detail::from_proto(desc, source, nullptr);
      desc.Clear();
      trim_heap();
      return p;
    } catch (const ProgramError& e) {
      error = e;  // reported below, with the line
    }
  }
  google::protobuf::io::ZeroCopyInputStream* again = open(pass);
  if (again == nullptr) throw *error;
  pb::ProgramDesc desc;
  google::protobuf::TextFormat::ParseInfoTree info;
  parse_text(*again, source, desc, &info);
  return ir_detail::from_proto(desc, source, &info);
}

}  // namespace

Program Program::from_text(std::string_view text, std::string_view source) {
  if (text.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    throw ProgramError(std::string(source) + ": input too large (over 2 GiB)");
  }
  std::optional<google::protobuf::io::ArrayInputStream> input;
  return parse_text(source, /*rewindable=*/true, [&](int) {
    input.emplace(text.data(), static_cast<int>(text.size()));
    return &*input;
  });
}

Program Program::from_text_stream(std::istream& in, std::string_view source,
                                  std::uint64_t max_bytes) {
  const std::istream::pos_type start = in.tellg();
  std::optional<BoundedInput> input;
  try {
    const bool rewindable = start != std::istream::pos_type(-1);
    return parse_text(source, rewindable,
                      [&](int pass) -> google::protobuf::io::ZeroCopyInputStream* {
                        if (pass > 0) {
                          input.reset();
                          in.clear();
                          if (start == std::istream::pos_type(-1) || !in.seekg(start))
                            return nullptr;
                        }
                        input.emplace(in, max_bytes);
                        return &*input;
                      });
  } catch (const ProgramError&) {
    if (in.bad()) CHANFLOW_THROW(Error) << "cannot read program file '" << source << "'";
    throw;
  }
}

Program Program::from_binary(std::string_view bytes, std::string_view source) {
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    throw ProgramError(std::string(source) + ": input too large (over 2 GiB)");
  }
  pb::ProgramDesc desc;
  if (!desc.ParsePartialFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    throw ProgramError(std::string(source) +
                       ": not a valid program in the binary format (truncated or corrupt "
                       "protobuf data, " +
                       std::to_string(bytes.size()) + " bytes)");
  }
  check_utf8(desc, "", source);
  return ir_detail::from_proto(desc, source, nullptr);
}

std::string Program::read_bytes(std::istream& in, std::string_view source,
                                std::uint64_t max_bytes) {
  // Chunked, so that a source without an end (/dev/zero, a pipe that never closes its write end
  // after filling) costs at most max_bytes + one chunk of memory before the error.
  constexpr size_t kChunk = size_t{1} << 16;
  std::string data;
  std::vector<char> chunk(kChunk);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(kChunk));
    const auto got = static_cast<size_t>(in.gcount());
    if (got > max_bytes - data.size()) too_large(source, max_bytes);  // data.size() <= max_bytes
    data.append(chunk.data(), got);
  }
  if (in.bad()) CHANFLOW_THROW(Error) << "cannot read program file '" << source << "'";
  return data;
}

Program Program::from_file(const std::string& path, std::uint64_t max_bytes) {
  const FileFormat format = format_of(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) CHANFLOW_THROW(Error) << "cannot open program file '" << path << "'";
  if (format == FileFormat::kText) return from_text_stream(in, path, max_bytes);
  return from_binary(read_bytes(in, path, max_bytes), path);
}

std::string Program::to_text() const {
  const pb::ProgramDesc desc = ir_detail::to_proto(*this);
  std::string out;
  google::protobuf::TextFormat::Printer printer;
  if (!printer.PrintToString(desc, &out)) {
    throw ProgramError("cannot print the program in the text format");
  }
  return out;
}

std::string Program::to_binary() const {
  const pb::ProgramDesc desc = ir_detail::to_proto(*this);
  std::string out;
  if (!desc.SerializePartialToString(&out)) {
    throw ProgramError("cannot serialise the program in the binary format");
  }
  return out;
}

void Program::save(const std::string& path) const {
  const FileFormat format = format_of(path);
  const std::string data = format == FileFormat::kText ? to_text() : to_binary();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) CHANFLOW_THROW(Error) << "cannot write program file '" << path << "'";
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  out.flush();
  if (!out) CHANFLOW_THROW(Error) << "cannot write program file '" << path << "'";
}

}  // namespace chanflow
