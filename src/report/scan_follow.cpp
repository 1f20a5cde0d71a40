// Streaming scan on top of scan(): the lines since the last emitted block
// are held and scanned again when more arrive.
//
// scan() decides where a block ends from the lines up to that point only (it
// is one forward pass), so a block it closes before the last line it was
// given is final: more lines cannot change it. Only the block still open at
// the end of the held lines is in doubt, and it is emitted once a line it did
// not take has arrived, on idle, or at the end. Boundaries do not depend on
// the catalog, so the held lines are scanned against an empty one and only a
// finished block is matched, once.

#include "errshim/follow.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "chars.hpp"
#include "text.hpp"

namespace errshim {

namespace {

using sv = std::string_view;

// scan() bridges at most two blank lines inside a block: a third line after
// a block's last one has always decided whether it ended.
constexpr std::size_t kDecidingLines = 3;
// Lines kept when no block is open: more than scan() looks back for the
// message paragraph of a c10 "Exception raised from" line.
constexpr std::size_t kKeepNoiseLines = 16;

const Catalog& boundaries_only() {
  static const CatalogPtr empty = CatalogBuilder().build();
  return *empty;
}

using detail::rtrim;

// Whether `line` starts like `other`, digits matching any digit (the way
// scan() compares a continuation line's log prefix with the block's).
bool shape_prefix(sv line, sv other) {
  if (line.size() > other.size()) return false;
  for (std::size_t i = 0; i < line.size(); ++i)
    if (line[i] != other[i] && !(detail::is_digit(line[i]) && detail::is_digit(other[i]))) return false;
  return true;
}

std::vector<sv> split_lines(sv text) {
  std::vector<sv> out;
  for (std::size_t start = 0;;) {
    const std::size_t nl = text.find('\n', start);
    out.push_back(text.substr(start, nl == sv::npos ? sv::npos : nl - start));
    if (nl == sv::npos) return out;
    start = nl + 1;
  }
}

// Whether scan() may have held `line` as a blank inside the block: it is
// blank once the block's log prefix is taken off, and that prefix begins
// some line of the block. Colour codes and carriage returns change what
// scan() compares, so a line with them is taken as possibly blank.
bool possibly_blank(sv line, const std::vector<sv>& block_lines) {
  if (line.find('\x1b') != sv::npos || line.find('\r') != sv::npos) return true;
  const sv c = rtrim(line);
  if (c.empty()) return true;
  for (sv b : block_lines)
    if (b.find('\x1b') != sv::npos || shape_prefix(c, b)) return true;
  return false;
}

}  // namespace

BlockFollower::BlockFollower(std::string file, CatalogPtr catalog, BlockVisitor visit, FollowOptions options)
    : file_(std::move(file)), catalog_(std::move(catalog)), visit_(std::move(visit)), options_(std::move(options)) {
  if (!catalog_) throw std::invalid_argument("BlockFollower needs a catalog");
  options_.scan.on_progress = nullptr;
  // The floors scan() applies, so a line held here is never cut again there.
  options_.scan.max_line_bytes = std::max<std::size_t>(options_.scan.max_line_bytes, 256);
  options_.scan.max_block_bytes = std::max<std::size_t>(options_.scan.max_block_bytes, 4096);
}

std::uint64_t BlockFollower::push(std::string_view bytes, Clock::time_point now) {
  last_input_ = now;
  stats_.bytes += bytes.size();
  std::uint64_t lines = 0;
  const std::size_t max_line = options_.scan.max_line_bytes;
  while (!bytes.empty()) {
    const std::size_t nl = bytes.find('\n');
    const sv piece = bytes.substr(0, nl);
    const std::size_t room = max_line > partial_.size() ? max_line - partial_.size() : 0;
    partial_.append(piece.data(), std::min(room, piece.size()));
    partial_cut_ = partial_cut_ || piece.size() > room;
    if (nl == sv::npos) break;
    bytes.remove_prefix(nl + 1);
    ++lines;
    add_line(std::exchange(partial_, std::string()), std::exchange(partial_cut_, false));
  }
  if (lines > 0) rescan(false);
  return lines;
}

void BlockFollower::add_line(std::string text, bool cut) {
  const auto add = [&](std::string t, bool c) {
    ++stats_.lines;
    pending_bytes_ += t.size() + 1;
    pending_.push_back(Line{std::move(t), next_line_++, c});
  };
  if (options_.syslog_escapes && text.find('#') != std::string::npos) {
    std::string cur;
    for (std::size_t i = 0; i < text.size(); ++i) {
      if (text.compare(i, 4, "#012") == 0) {
        add(std::exchange(cur, std::string()), false);
        i += 3;
      } else if (text.compare(i, 4, "#011") == 0) {
        cur += '\t';
        i += 3;
      } else {
        cur += text[i];
      }
    }
    text = std::move(cur);
  }
  add(std::move(text), cut);
  // A flood of lines in one push is looked at before it outgrows the bound.
  if (pending_bytes_ > 2 * options_.scan.max_block_bytes) rescan(false);
}

void BlockFollower::rescan(bool final) {
  open_ = false;
  if (pending_.empty()) return;
  std::string joined;
  joined.reserve(pending_bytes_);
  for (const Line& l : pending_) (joined += l.text) += '\n';
  std::istringstream in(std::move(joined));
  std::vector<ScanBlock> blocks;
  ScanOptions o = options_.scan;
  // Large enough that scan() never shortens the held lines: bound() does,
  // and knows which line numbers it dropped.
  o.max_block_bytes = 4 * options_.scan.max_block_bytes;
  scan(
      in, file_, boundaries_only(), [&](const ScanBlock& b) { blocks.push_back(b); }, o);

  std::size_t consumed = 0, open_start = 0;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const std::size_t first = static_cast<std::size_t>(blocks[i].line - 1);
    const std::size_t last = first + static_cast<std::size_t>(blocks[i].lines) - 1;
    if (i + 1 < blocks.size() || final || surely_closed(blocks[i], last)) {
      emit(std::move(blocks[i]), first, last);
      consumed = last + 1;
    } else {
      open_ = true;
      open_start = first;
    }
  }
  const std::size_t drop =
      open_
          ? open_start
          : std::max(consumed, pending_.size() > kKeepNoiseLines ? pending_.size() - kKeepNoiseLines : std::size_t{0});
  for (std::size_t i = 0; i < drop; ++i) {
    pending_bytes_ -= pending_.front().text.size() + 1;
    pending_.pop_front();
  }
  bound();
}

bool BlockFollower::surely_closed(const ScanBlock& block, std::size_t last) const {
  const std::size_t after = pending_.size() - 1 - last;
  if (after >= kDecidingLines) return true;
  if (block.truncated) return false;
  const std::vector<sv> lines = split_lines(block.text);
  for (std::size_t i = last + 1; i < pending_.size(); ++i)
    if (!possibly_blank(pending_[i].text, lines)) return true;
  return false;
}

void BlockFollower::emit(ScanBlock b, std::size_t first, std::size_t last) {
  b.file = file_;
  b.line = pending_[first].number;
  b.lines = pending_[last].number - pending_[first].number + 1;
  // Lines bound() dropped from the middle of a long block: marked in the text
  // the way scan() marks the lines it drops.
  std::size_t gap_at = 0;
  std::uint64_t gap = 0;
  for (std::size_t i = first; i <= last; ++i) {
    b.truncated = b.truncated || pending_[i].cut;
    if (i > first && pending_[i].number != pending_[i - 1].number + 1) {
      gap_at = i - first;
      gap = pending_[i].number - pending_[i - 1].number - 1;
    }
  }
  if (gap > 0) {
    b.truncated = true;
    std::vector<sv> lines = split_lines(b.text);
    if (lines.size() == last - first + 1) {
      const std::string marker = fmt::format("... [{} lines omitted] ...", gap);
      lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(gap_at), marker);
      b.text = fmt::format("{}", fmt::join(lines, "\n"));
    }
  }
  MatchResult r = catalog_->match(b.text, options_.scan.context);
  b.diagnosis = std::move(r.diagnosis);
  b.problems = std::move(r.problems);
  ++stats_.blocks;
  if (b.diagnosis) ++stats_.matched;
  visit_(b);
}

// An open block over the budget keeps its first quarter and its last lines,
// as scan() does with a long block.
void BlockFollower::bound() {
  const std::size_t budget = options_.scan.max_block_bytes;
  // Without an open block only a few lines are kept anyway (and a gap there
  // would mark lines as omitted from a block that never had them).
  if (!open_ || pending_bytes_ <= budget) return;
  std::size_t head = 0, head_bytes = 0;
  while (head + 1 < pending_.size() && head_bytes + pending_[head].text.size() + 1 <= budget / 4)
    head_bytes += pending_[head++].text.size() + 1;
  head = std::max<std::size_t>(head, 1);
  while (pending_bytes_ > budget && pending_.size() > head + 1) {
    const auto at = pending_.begin() + static_cast<std::ptrdiff_t>(head);
    pending_bytes_ -= at->text.size() + 1;
    pending_.erase(at);
  }
}

void BlockFollower::tick(Clock::time_point now) {
  if (const auto d = deadline(); d && now >= *d) rescan(true);
}

std::optional<BlockFollower::Clock::time_point> BlockFollower::deadline() const {
  if (!open_) return std::nullopt;
  return last_input_ + options_.idle;
}

void BlockFollower::finish() {
  if (!partial_.empty() || partial_cut_)
    add_line(std::exchange(partial_, std::string()), std::exchange(partial_cut_, false));
  rescan(true);
}

void BlockFollower::restart_file() {
  finish();
  pending_.clear();
  pending_bytes_ = 0;
  next_line_ = 1;
}

// ------------------------------------------------------------ following a file or a pipe

namespace {

struct Fd {
  int fd = -1;
  bool owned = false;
  ~Fd() {
    if (owned && fd >= 0) ::close(fd);
  }
};

int wait_ms(const BlockFollower& f, std::chrono::milliseconds poll) {
  auto wait = poll;
  if (const auto d = f.deadline()) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(*d - BlockFollower::Clock::now());
    wait = std::clamp(left, std::chrono::milliseconds(0), poll);
  }
  return static_cast<int>(wait.count());
}

}  // namespace

void follow(const std::string& path, BlockFollower& follower, const std::function<bool()>& stop,
            const std::function<void(std::uint64_t lines)>& on_lines, std::chrono::milliseconds poll) {
  using Clock = BlockFollower::Clock;
  const bool from_stdin = path == "-";
  Fd in;
  const auto open_path = [&]() {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error(fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
    return fd;
  };
  in.fd = from_stdin ? STDIN_FILENO : open_path();
  in.owned = !from_stdin;
  struct stat st {};
  if (::fstat(in.fd, &st) != 0)
    throw std::runtime_error(fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
  if (S_ISDIR(st.st_mode)) throw std::runtime_error(fmt::format("'{}' is a directory", path));
  // Standard input ends at its end even when it is a file: there is no path
  // to watch for rotation.
  const bool growing_file = !from_stdin && S_ISREG(st.st_mode);
  std::uint64_t offset = 0;
  std::string buf(64u << 10, '\0');
  while (!(stop && stop())) {
    if (!growing_file) {
      pollfd p{in.fd, POLLIN, 0};
      const int rc = ::poll(&p, 1, wait_ms(follower, poll));
      if (rc < 0 && errno != EINTR)
        throw std::runtime_error(fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
      if (rc <= 0) {
        follower.tick(Clock::now());
        continue;
      }
    }
    const ssize_t n = ::read(in.fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      throw std::runtime_error(fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
    }
    if (n > 0) {
      offset += static_cast<std::uint64_t>(n);
      const std::uint64_t lines =
          follower.push(std::string_view(buf.data(), static_cast<std::size_t>(n)), Clock::now());
      if (on_lines && lines > 0) on_lines(lines);
      continue;
    }
    if (!growing_file) break;  // the writer closed the pipe
    follower.tick(Clock::now());
    // At the end of the file: has it been replaced or cut short meanwhile?
    // Only now, so the lines written to the old file before it was
    // rotated are all read first.
    struct stat cur {};
    if (::stat(path.c_str(), &cur) == 0) {
      if (cur.st_ino != st.st_ino || cur.st_dev != st.st_dev) {
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
          ::close(in.fd);
          in.fd = fd;
          if (::fstat(fd, &st) != 0) st = cur;
          offset = 0;
          follower.restart_file();
          continue;
        }
      } else if (static_cast<std::uint64_t>(cur.st_size) < offset) {
        if (::lseek(in.fd, 0, SEEK_SET) == 0) {
          offset = 0;
          follower.restart_file();
          continue;
        }
      }
    }
    ::poll(nullptr, 0, wait_ms(follower, poll));
  }
  follower.finish();
}

}  // namespace errshim
