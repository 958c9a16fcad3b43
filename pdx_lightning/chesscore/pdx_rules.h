/* The chess rules of the compiled core: positions, games, move generation, make, game ends (the rules
 * of pdx_lightning.chesscore.rules, in its order). python-chess stays the oracle; tests compare the two.
 *
 * Squares as python-chess: a1 = 0 ... h8 = 63; colors 0 = White, 1 = Black; piece types
 * 0..5 = P N B R Q K (python-chess's minus one). A move is from | to << 6 | promo << 12 with promo
 * as python-chess's piece type (0 none, 2 N, 3 B, 4 R, 5 Q). Castling is the king's two-square
 * move (e1g1), as python-chess writes it in standard chess.
 */
#ifndef PDX_RULES_H
#define PDX_RULES_H

#include <stdint.h>

#include "pdx_limits.h"

enum { P, N, B, R, Q, K };
enum { R_NONE = 0, R_CHECKMATE, R_INSUFFICIENT, R_STALEMATE, R_75, R_FIVEFOLD, R_FIFTY, R_THREEFOLD, R_CAP };

typedef struct {
    uint64_t bb[2][6];
    uint64_t occ[2];
    uint64_t castling;     /* rook squares of the remaining rights (python-chess's castling_rights) */
    int ep;                /* python-chess's ep_square: set after every double push, else -1 */
    int turn, halfmove, fullmove;
} Pos;

typedef struct { uint64_t w[9]; } Key;

typedef struct {
    Pos pos;
    uint64_t snap[HIST][12];   /* ring of the last 8 positions: White P..K, Black P..K */
    uint8_t rep[HIST];
    int head, nsnap;           /* snap[head] is the newest */
    uint64_t fill[12];         /* history fill before a non-standard root (earliest position, push undone) */
    uint8_t fill_rep;
    int from_start;
    Key window[WINDOW];
    int nwin, reps;            /* reps: occurrences of the current key in the window, counting it */
    uint16_t legal[MAX_MOVES];
    int16_t legal_index[MAX_MOVES];
    int nlegal, legal_ep;
    uint16_t *moves;
    int nmoves, cap_moves;
} Game;

typedef struct { int n; Game *g; } Core;

#define BIT(s) (1ULL << (s))
static inline int lsb(uint64_t b) { return __builtin_ctzll(b); }
static inline int msb(uint64_t b) { return 63 - __builtin_clzll(b); }
static inline int popcnt(uint64_t b) { return __builtin_popcountll(b); }

static inline uint64_t all_occ(const Pos *p) { return p->occ[0] | p->occ[1]; }

PDX_INTERNAL int attacked(const Pos *p, int sq, int by);

static inline int in_check(const Pos *p, int side) {
    return p->bb[side][K] ? attacked(p, lsb(p->bb[side][K]), !side) : 0;
}

static inline int ply(const Pos *p) { return 2 * (p->fullmove - 1) + p->turn; }

static inline int bad_game(const Core *c, int i) { return i < 0 || i >= c->n; }

/* the start position */
PDX_INTERNAL extern const Pos START;

void pdx_init(void);
/* game g set to root `root`, its history and move list empty; 0 */
PDX_INTERNAL int setup(Game *g, const Pos *root);
/* what the move buffers and the rules rest on (python-chess's Board.status() checks more): no two
   pieces on a square, one king and at most MAX_MEN men a side, no pawn on a back rank, python-chess's
   clean castling rights and valid en-passant square, the side not to move not in check, clocks in range */
PDX_INTERNAL int valid_root(const Pos *p);
/* whether legal move m of game g can be pushed: room in the window (a capture or pawn move empties
   it) and in the move list (grown here); PDX_E_WINDOW / PDX_E_NOMEM change nothing */
PDX_INTERNAL int room(Game *g, uint16_t m);
/* play legal move m in game g; on a code, g is unchanged */
PDX_INTERNAL int push(Game *g, uint16_t m);
/* play legal move m in a scratch game (no move list kept) */
PDX_INTERNAL int scratch_push(Game *g, uint16_t m);
/* chesscore.rules.game_end, in its order; max_plies < 0: no cap */
PDX_INTERNAL int end_reason(const Game *g, int claim, int max_plies);
/* leaf nodes of the legal move tree at `depth` (>= 1) */
PDX_INTERNAL int64_t perft(const Pos *p, int depth);

#endif
