/* pdx_core: the self-play chess side in C (python-chess stays the oracle; tests compare the two).
 *
 * Holds N games and, in one call per batch, plays policy-slot moves, generates the next legal
 * moves, decides game ends (the rules of pdx_lightning.chesscore.rules, in its order), writes Lc0's
 * 112 input planes (chesscore.encoding) and the legal masks and sorted legal policy indices
 * (chesscore.moves) into caller-owned buffers. Loaded with ctypes (chesscore/native_core.py); every
 * entry point touches only the games it is given, so threads may run disjoint games at once
 * (ctypes releases the GIL during a call).
 *
 * Squares as python-chess: a1 = 0 ... h8 = 63; colors 0 = White, 1 = Black; piece types
 * 0..5 = P N B R Q K (python-chess's minus one). A move is from | to << 6 | promo << 12 with promo
 * as python-chess's piece type (0 none, 2 N, 3 B, 4 R, 5 Q). Castling is the king's two-square
 * move (e1g1), as python-chess writes it in standard chess.
 *
 * Inputs are checked twice: chesscore/boundary.py validates every board, index and buffer before
 * a call, and the core checks again what its memory safety rests on (game indices, and in
 * pdx_core_set the root's structure: valid_root), answering with a PDX_E_* code, never writing out
 * of bounds. Every entry point that can fail returns 0 or a PDX_E_* code (the counting ones a count
 * or a code); a batch call names its failing row in *where, and a failed pdx_core_play changed no
 * game (all rows are checked before any is played).
 *
 * Move buffers: a root passes valid_root only with one king and at most 16 men a side (no two
 * pieces on a square), and play never adds men, so a position has at most 10 + 15 * 27 = 415
 * pseudo-legal moves (a king's 8 steps and 2 castlings; any other man at most a queen's 27: a rook
 * 14, a bishop 13, a knight 8, a pawn 12 = 3 squares x 4 promotions); MAXMOVES is above that.
 * The clocks: a root's fullmove number is at most MAX_FULLMOVE and its halfmove clock at most
 * MAX_HALFMOVE, and a game holds at most WINDOW positions between captures and pawn moves (at most
 * 16 * 6 pawn moves + 30 captures), so ply() and the clocks stay far inside an int.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HIST 8
#define WINDOW 200          /* positions since the last irreversible move (the 75-move rule ends at 151) */
#define MAXMOVES 416        /* > 415, the most pseudo-legal moves of a position (header) */
#define POLICY 4288
#define LEGAL_STRIDE MAXMOVES
#define MAX_MEN 16
#define MAX_FULLMOVE 1000000
#define MAX_HALFMOVE 1000000
#define PDX_ABI 2           /* bumped when an entry point or a limit changes (native_core.py checks it) */

/* a C99 static assertion: the move buffers hold the bound proven in the header */
typedef char maxmoves_holds_the_bound[(MAXMOVES > 10 + (MAX_MEN - 1) * 27) ? 1 : -1];

/* fault injection for the tests (a build with -DPDX_FAULTS only): the next n allocations fail */
#ifdef PDX_FAULTS
static int fail_allocs = 0;
void pdx_fault_fail_allocs(int n) { fail_allocs = n; }
#define ALLOC_FAILS() (fail_allocs > 0 && fail_allocs-- > 0)
#else
#define ALLOC_FAILS() 0
#endif

/* the codes of failing calls (native_core.py maps each to a named exception) */
enum { PDX_OK = 0, PDX_E_ILLEGAL = -1, PDX_E_WINDOW = -2, PDX_E_NOMEM = -3, PDX_E_BOARD = -4, PDX_E_INDEX = -5 };

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
    uint16_t legal[MAXMOVES];
    int16_t legal_index[MAXMOVES];
    int nlegal, legal_ep;
    uint16_t *moves;
    int nmoves, cap_moves;
} Game;

typedef struct { int n; Game *g; } Core;

static uint64_t KNIGHT_ATT[64], KING_ATT[64], PAWN_ATT[2][64], RAYS[8][64];
static const int DIRS[8] = {8, -8, 1, -1, 9, 7, -7, -9};   /* N S E W NE NW SE SW */
static const int POSITIVE[8] = {1, 0, 1, 0, 1, 1, 0, 0};
static int inited = 0;

#define BIT(s) (1ULL << (s))
static inline int lsb(uint64_t b) { return __builtin_ctzll(b); }
static inline int msb(uint64_t b) { return 63 - __builtin_clzll(b); }
static inline int popcnt(uint64_t b) { return __builtin_popcountll(b); }

static int on_board_step(int sq, int df, int dr) {
    int f = sq % 8 + df, r = sq / 8 + dr;
    return (f < 0 || f > 7 || r < 0 || r > 7) ? -1 : r * 8 + f;
}

void pdx_init(void) {
    if (inited) return;
    static const int KN[8][2] = {{1, 2}, {2, 1}, {2, -1}, {1, -2}, {-1, -2}, {-2, -1}, {-2, 1}, {-1, 2}};
    static const int DF[8] = {0, 0, 1, -1, 1, -1, 1, -1}, DR[8] = {1, -1, 0, 0, 1, 1, -1, -1};
    for (int sq = 0; sq < 64; sq++) {
        KNIGHT_ATT[sq] = KING_ATT[sq] = PAWN_ATT[0][sq] = PAWN_ATT[1][sq] = 0;
        for (int k = 0; k < 8; k++) {
            int t = on_board_step(sq, KN[k][0], KN[k][1]);
            if (t >= 0) KNIGHT_ATT[sq] |= BIT(t);
            t = on_board_step(sq, DF[k], DR[k]);
            if (t >= 0) KING_ATT[sq] |= BIT(t);
        }
        for (int df = -1; df <= 1; df += 2) {
            int t = on_board_step(sq, df, 1);
            if (t >= 0) PAWN_ATT[0][sq] |= BIT(t);
            t = on_board_step(sq, df, -1);
            if (t >= 0) PAWN_ATT[1][sq] |= BIT(t);
        }
        for (int d = 0; d < 8; d++) {
            RAYS[d][sq] = 0;
            int t = sq;
            while ((t = on_board_step(t, DF[d], DR[d])) >= 0) RAYS[d][sq] |= BIT(t);
        }
    }
    (void)DIRS;
    inited = 1;
}

static inline uint64_t ray(int d, int sq, uint64_t occ) {
    uint64_t r = RAYS[d][sq], b = r & occ;
    if (b) r ^= RAYS[d][POSITIVE[d] ? lsb(b) : msb(b)];
    return r;
}
static inline uint64_t rook_att(int sq, uint64_t occ) {
    return ray(0, sq, occ) | ray(1, sq, occ) | ray(2, sq, occ) | ray(3, sq, occ);
}
static inline uint64_t bishop_att(int sq, uint64_t occ) {
    return ray(4, sq, occ) | ray(5, sq, occ) | ray(6, sq, occ) | ray(7, sq, occ);
}

static inline uint64_t all_occ(const Pos *p) { return p->occ[0] | p->occ[1]; }

static int attacked(const Pos *p, int sq, int by) {
    uint64_t occ = all_occ(p);
    const uint64_t *b = p->bb[by];
    return (PAWN_ATT[!by][sq] & b[P]) || (KNIGHT_ATT[sq] & b[N]) || (KING_ATT[sq] & b[K])
        || (bishop_att(sq, occ) & (b[B] | b[Q])) || (rook_att(sq, occ) & (b[R] | b[Q]));
}

static inline int in_check(const Pos *p, int side) {
    return p->bb[side][K] ? attacked(p, lsb(p->bb[side][K]), !side) : 0;
}

static int piece_at(const Pos *p, int color, int sq) {
    uint64_t m = BIT(sq);
    if (!(p->occ[color] & m)) return -1;
    for (int t = 0; t < 6; t++) if (p->bb[color][t] & m) return t;
    return -1;
}

static inline uint16_t mk(int from, int to, int promo) { return (uint16_t)(from | to << 6 | promo << 12); }

static int add_targets(uint16_t *out, int n, int from, uint64_t targets) {
    while (targets) { out[n++] = mk(from, lsb(targets), 0); targets &= targets - 1; }
    return n;
}

static int add_pawn(uint16_t *out, int n, int from, int to) {
    if (to / 8 == 0 || to / 8 == 7) {
        for (int pr = 5; pr >= 2; pr--) out[n++] = mk(from, to, pr);   /* Q R B N */
    } else {
        out[n++] = mk(from, to, 0);
    }
    return n;
}

static int pseudo_legal(const Pos *p, uint16_t *out) {
    int us = p->turn, them = !us, n = 0;
    uint64_t occ = all_occ(p), own = p->occ[us], opp = p->occ[them];
    const uint64_t *b = p->bb[us];
    int fwd = us == 0 ? 8 : -8, start_rank = us == 0 ? 1 : 6;
    for (uint64_t pw = b[P]; pw; pw &= pw - 1) {
        int s = lsb(pw), t = s + fwd;
        if (t >= 0 && t < 64 && !(occ & BIT(t))) {
            n = add_pawn(out, n, s, t);
            int t2 = t + fwd;
            if (s / 8 == start_rank && !(occ & BIT(t2))) out[n++] = mk(s, t2, 0);
        }
        for (uint64_t c = PAWN_ATT[us][s] & opp; c; c &= c - 1) n = add_pawn(out, n, s, lsb(c));
        if (p->ep >= 0 && (PAWN_ATT[us][s] & BIT(p->ep)) && !(occ & BIT(p->ep))) out[n++] = mk(s, p->ep, 0);
    }
    for (uint64_t x = b[N]; x; x &= x - 1) { int s = lsb(x); n = add_targets(out, n, s, KNIGHT_ATT[s] & ~own); }
    for (uint64_t x = b[B]; x; x &= x - 1) { int s = lsb(x); n = add_targets(out, n, s, bishop_att(s, occ) & ~own); }
    for (uint64_t x = b[R]; x; x &= x - 1) { int s = lsb(x); n = add_targets(out, n, s, rook_att(s, occ) & ~own); }
    for (uint64_t x = b[Q]; x; x &= x - 1) {
        int s = lsb(x);
        n = add_targets(out, n, s, (rook_att(s, occ) | bishop_att(s, occ)) & ~own);
    }
    if (b[K]) {
        int s = lsb(b[K]);
        n = add_targets(out, n, s, KING_ATT[s] & ~own);
        int home = us == 0 ? 4 : 60;
        if (s == home && !attacked(p, s, them)) {
            int rh = home + 3, ra = home - 4;
            if ((p->castling & BIT(rh)) && (b[R] & BIT(rh)) && !(occ & (BIT(home + 1) | BIT(home + 2)))
                && !attacked(p, home + 1, them) && !attacked(p, home + 2, them))
                out[n++] = mk(home, home + 2, 0);
            if ((p->castling & BIT(ra)) && (b[R] & BIT(ra))
                && !(occ & (BIT(home - 1) | BIT(home - 2) | BIT(home - 3)))
                && !attacked(p, home - 1, them) && !attacked(p, home - 2, them))
                out[n++] = mk(home, home - 2, 0);
        }
    }
    return n;
}

static void make(Pos *p, uint16_t m) {
    int from = m & 63, to = m >> 6 & 63, promo = m >> 12;
    int us = p->turn, them = !us;
    int pt = piece_at(p, us, from);
    int cap = piece_at(p, them, to), cap_sq = to;
    uint64_t fb = BIT(from), tb = BIT(to);
    int ep = p->ep;
    p->ep = -1;
    if (pt == P && to == ep && cap < 0 && (to - from == 7 || to - from == 9 || from - to == 7 || from - to == 9)) {
        cap_sq = us == 0 ? to - 8 : to + 8;
        cap = P;
    }
    if (cap >= 0) {
        p->bb[them][cap] &= ~BIT(cap_sq);
        p->occ[them] &= ~BIT(cap_sq);
    }
    p->bb[us][pt] &= ~fb;
    p->bb[us][promo ? promo - 1 : pt] |= tb;
    p->occ[us] = (p->occ[us] & ~fb) | tb;
    if (pt == K && (to - from == 2 || from - to == 2)) {   /* castling: the rook follows */
        int rf = to > from ? from + 3 : from - 4, rt = to > from ? from + 1 : from - 1;
        p->bb[us][R] = (p->bb[us][R] & ~BIT(rf)) | BIT(rt);
        p->occ[us] = (p->occ[us] & ~BIT(rf)) | BIT(rt);
    }
    p->castling &= ~tb & ~fb;
    if (pt == K) p->castling &= us == 0 ? ~0xFFULL : ~(0xFFULL << 56);
    if (pt == P) {
        if (to - from == 16 && from / 8 == 1) p->ep = from + 8;
        else if (from - to == 16 && from / 8 == 6) p->ep = from - 8;
    }
    p->halfmove = (pt == P || cap >= 0) ? 0 : p->halfmove + 1;
    if (us == 1) p->fullmove++;
    p->turn = them;
}

static int gen_legal(const Pos *p, uint16_t *out, int *legal_ep) {
    uint16_t buf[MAXMOVES];
    int n = pseudo_legal(p, buf), k = 0, us = p->turn;
    *legal_ep = 0;
    for (int i = 0; i < n; i++) {
        Pos q = *p;
        make(&q, buf[i]);
        if (in_check(&q, us)) continue;
        out[k++] = buf[i];
        int from = buf[i] & 63, to = buf[i] >> 6 & 63;
        if (to == p->ep && (p->bb[us][P] & BIT(from)) && !(all_occ(p) & BIT(to))) *legal_ep = 1;
    }
    return k;
}

static int move_index(uint16_t m, int turn) {
    int f = m & 63, t = m >> 6 & 63, promo = m >> 12;
    if (turn) { f ^= 56; t ^= 56; }
    if (promo == 0 || promo == 2) return f * 64 + t;
    return 4096 + (f % 8) * 24 + (t % 8) * 3 + (promo == 5 ? 0 : promo == 4 ? 1 : 2);
}

static void snapshot(const Pos *p, uint64_t *s) {
    for (int c = 0; c < 2; c++) for (int t = 0; t < 6; t++) s[c * 6 + t] = p->bb[c][t];
}

static void make_key(const Game *g, Key *k) {
    const Pos *p = &g->pos;
    for (int t = 0; t < 6; t++) k->w[t] = p->bb[0][t] | p->bb[1][t];
    k->w[6] = p->occ[0];
    k->w[7] = p->occ[1];
    uint64_t c = p->castling;
    uint64_t rights = (c & 1) | (c >> 7 & 1) << 1 | (c >> 56 & 1) << 2 | (c >> 63 & 1) << 3;
    uint64_t ep = (g->legal_ep && p->ep >= 0) ? (uint64_t)(p->ep + 1) : 0;
    k->w[8] = (uint64_t)p->turn | rights << 1 | ep << 8;
}

/* after the position changed: legal moves, their indices, the key and its count (the caller made
   sure the window has room: setup, or push's check) */
static int settle(Game *g, int irreversible) {
    g->nlegal = gen_legal(&g->pos, g->legal, &g->legal_ep);
    for (int i = 0; i < g->nlegal; i++) g->legal_index[i] = (int16_t)move_index(g->legal[i], g->pos.turn);
    Key k;
    make_key(g, &k);
    if (irreversible) g->nwin = 0;
    int count = 0;
    for (int i = 0; i < g->nwin; i++) count += memcmp(&g->window[i], &k, sizeof k) == 0;
    if (g->nwin >= WINDOW) return PDX_E_WINDOW;    /* unreachable: push checked */
    g->window[g->nwin++] = k;
    g->reps = count + 1;
    g->head = (g->head + HIST - 1) % HIST;
    snapshot(&g->pos, g->snap[g->head]);
    g->rep[g->head] = count > 0;
    if (g->nsnap < HIST) g->nsnap++;
    return 0;
}

static const Pos START = {
    .bb = {{0xFF00ULL, 0x42ULL, 0x24ULL, 0x81ULL, 0x8ULL, 0x10ULL},
           {0xFFULL << 48, 0x42ULL << 56, 0x24ULL << 56, 0x81ULL << 56, 0x8ULL << 56, 0x10ULL << 56}},
    .occ = {0xFFFFULL, 0xFFFFULL << 48},
    .castling = 0x81ULL | 0x81ULL << 56, .ep = -1, .turn = 0, .halfmove = 0, .fullmove = 1};

static int same_pos(const Pos *a, const Pos *b) {
    return !memcmp(a->bb, b->bb, sizeof a->bb) && a->castling == b->castling && a->ep == b->ep
        && a->turn == b->turn;
}

static int setup(Game *g, const Pos *root) {
    g->pos = *root;
    g->nwin = 0;
    g->nsnap = 0;
    g->head = 0;
    g->nmoves = 0;
    g->from_start = same_pos(root, &START);
    if (settle(g, 1)) return -1;
    /* history fill: the root with the double push behind its en-passant square undone (encoding.py) */
    memcpy(g->fill, g->snap[g->head], sizeof g->fill);
    g->fill_rep = g->rep[g->head];
    int ep = root->ep;
    if (!g->from_start && ep >= 0) {
        int white = ep / 8 == 2, frm = white ? ep - 8 : ep + 8, to = white ? ep + 8 : ep - 8, k = white ? 0 : 6;
        uint64_t any = 0;
        for (int i = 0; i < 12; i++) any |= g->fill[i];
        if ((g->fill[k] >> to & 1) && !(any >> frm & 1)) g->fill[k] = (g->fill[k] & ~BIT(to)) | BIT(frm);
    }
    return 0;
}

/* the core's ABI version and limits: abi, MAXMOVES, LEGAL_STRIDE, WINDOW, MAX_FULLMOVE, MAX_HALFMOVE */
void pdx_core_limits(int32_t *out) {
    out[0] = PDX_ABI; out[1] = MAXMOVES; out[2] = LEGAL_STRIDE; out[3] = WINDOW;
    out[4] = MAX_FULLMOVE; out[5] = MAX_HALFMOVE;
}

static int bad_game(const Core *c, int i) { return i < 0 || i >= c->n; }

/* PDX_E_INDEX with *where = the first row whose game index is out of range, else 0 */
static int check_games(const Core *c, int n, const int32_t *games, int32_t *where) {
    for (int r = 0; r < n; r++)
        if (bad_game(c, games[r])) { *where = r; return PDX_E_INDEX; }
    return PDX_OK;
}

Core *pdx_core_new(int n) {
    pdx_init();
    if (n < 1 || ALLOC_FAILS()) return NULL;
    Core *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->n = n;
    c->g = calloc((size_t)n, sizeof *c->g);
    if (!c->g) { free(c); return NULL; }
    for (int i = 0; i < n; i++) setup(&c->g[i], &START);
    return c;
}

void pdx_core_free(Core *c) {
    if (!c) return;
    for (int i = 0; i < c->n; i++) free(c->g[i].moves);
    free(c->g);
    free(c);
}

int pdx_core_reset(Core *c, int i) { return bad_game(c, i) ? PDX_E_INDEX : setup(&c->g[i], &START); }

/* what the move buffers and the rules rest on (python-chess's Board.status() checks more): no two
   pieces on a square, one king and at most MAX_MEN men a side, no pawn on a back rank, python-chess's
   clean castling rights and valid en-passant square, the side not to move not in check, clocks in range */
static int valid_root(const Pos *p) {
    uint64_t seen = 0;
    for (int col = 0; col < 2; col++)
        for (int t = 0; t < 6; t++) {
            if (seen & p->bb[col][t]) return 0;
            seen |= p->bb[col][t];
        }
    for (int col = 0; col < 2; col++)
        if (popcnt(p->bb[col][K]) != 1 || popcnt(p->occ[col]) > MAX_MEN) return 0;
    if ((p->bb[0][P] | p->bb[1][P]) & 0xFF000000000000FFULL) return 0;
    if (p->turn != 0 && p->turn != 1) return 0;
    uint64_t rights = 0;
    if (p->bb[0][K] & BIT(4)) rights |= p->bb[0][R] & (BIT(0) | BIT(7));
    if (p->bb[1][K] & BIT(60)) rights |= p->bb[1][R] & (BIT(56) | BIT(63));
    if (p->castling & ~rights) return 0;
    if (p->ep != -1) {
        int e = p->ep, white = p->turn == 0;
        if (e < 0 || e > 63 || e / 8 != (white ? 5 : 2)) return 0;
        int pushed = white ? e - 8 : e + 8, from = white ? e + 8 : e - 8;
        if (!(p->bb[!p->turn][P] & BIT(pushed)) || (all_occ(p) & (BIT(e) | BIT(from)))) return 0;
    }
    if (in_check(p, !p->turn)) return 0;
    return p->halfmove >= 0 && p->halfmove <= MAX_HALFMOVE && p->fullmove >= 1 && p->fullmove <= MAX_FULLMOVE;
}

/* an arbitrary root: 12 bitboards (White P..K, Black P..K), side to move, castling rook squares
   (clean), python-chess's ep square or -1, the clocks; PDX_E_BOARD (game i unchanged) unless
   valid_root */
int pdx_core_set(Core *c, int i, const uint64_t *bb12, int turn, uint64_t castling, int ep, int halfmove,
                 int fullmove) {
    if (bad_game(c, i)) return PDX_E_INDEX;
    Pos p;
    memset(&p, 0, sizeof p);
    for (int col = 0; col < 2; col++)
        for (int t = 0; t < 6; t++) { p.bb[col][t] = bb12[col * 6 + t]; p.occ[col] |= bb12[col * 6 + t]; }
    p.turn = turn; p.castling = castling; p.ep = ep; p.halfmove = halfmove; p.fullmove = fullmove;
    if (!valid_root(&p)) return PDX_E_BOARD;
    return setup(&c->g[i], &p);
}

/* whether legal move m of game g can be pushed: room in the window (a capture or pawn move empties
   it) and in the move list (grown here); PDX_E_WINDOW / PDX_E_NOMEM change nothing */
static int room(Game *g, uint16_t m) {
    int from = m & 63, to = m >> 6 & 63, us = g->pos.turn;
    int irreversible = (g->pos.bb[us][P] & BIT(from)) || (g->pos.occ[!us] & BIT(to));
    if (!irreversible && g->nwin >= WINDOW) return PDX_E_WINDOW;
    if (g->nmoves == g->cap_moves) {
        int cap = g->cap_moves ? 2 * g->cap_moves : 256;
        uint16_t *mv = ALLOC_FAILS() ? NULL : realloc(g->moves, (size_t)cap * sizeof *mv);
        if (!mv) return PDX_E_NOMEM;
        g->moves = mv;
        g->cap_moves = cap;
    }
    return PDX_OK;
}

/* play legal move m in game g; on a code, g is unchanged */
static int push(Game *g, uint16_t m) {
    int e = room(g, m);
    if (e) return e;
    g->moves[g->nmoves++] = m;
    make(&g->pos, m);
    return settle(g, g->pos.halfmove == 0);
}

/* push a move given as from | to << 6 | promo << 12: 0, or PDX_E_ILLEGAL if it is not legal here,
   PDX_E_WINDOW, PDX_E_NOMEM, PDX_E_INDEX (the game unchanged) */
int pdx_core_push_move(Core *c, int i, int move) {
    if (bad_game(c, i)) return PDX_E_INDEX;
    Game *g = &c->g[i];
    for (int k = 0; k < g->nlegal; k++)
        if (g->legal[k] == move) return push(g, g->legal[k]);
    return PDX_E_ILLEGAL;
}

static int ply(const Pos *p) { return 2 * (p->fullmove - 1) + p->turn; }

static int insufficient(const Pos *p, int color) {
    const uint64_t *b = p->bb[color], *o = p->bb[!color];
    if (b[P] | b[R] | b[Q]) return 0;
    if (b[N]) return popcnt(p->occ[color]) <= 2 && !(p->occ[!color] & ~o[K] & ~o[Q]);
    if (b[B]) {
        uint64_t bishops = b[B] | o[B], dark = 0xAA55AA55AA55AA55ULL;
        int same = !(bishops & dark) || !(bishops & ~dark);
        return same && !(b[P] | o[P]) && !(b[N] | o[N]);
    }
    return 1;
}

/* chesscore.rules.game_end, in its order; max_plies < 0: no cap */
static int end_reason(const Game *g, int claim, int max_plies) {
    const Pos *p = &g->pos;
    if (g->nlegal == 0 && in_check(p, p->turn)) return R_CHECKMATE;
    if (insufficient(p, 0) && insufficient(p, 1)) return R_INSUFFICIENT;
    if (g->nlegal == 0) return R_STALEMATE;
    if (p->halfmove >= 150) return R_75;
    if (g->reps >= 5) return R_FIVEFOLD;
    if (claim) {
        if (p->halfmove >= 100) return R_FIFTY;
        if (g->reps >= 3) return R_THREEFOLD;
    }
    if (max_plies >= 0 && ply(p) >= max_plies) return R_CAP;
    return R_NONE;
}

/* reason codes and plies of the current positions; 0 or PDX_E_INDEX (*where: the row) */
int pdx_core_status(Core *c, int n, const int32_t *games, int claim, int max_plies, int32_t *reason,
                    int32_t *plies, int32_t *where) {
    if (check_games(c, n, games, where)) return PDX_E_INDEX;
    for (int r = 0; r < n; r++) {
        const Game *g = &c->g[games[r]];
        reason[r] = end_reason(g, claim, max_plies);
        plies[r] = ply(&g->pos);
    }
    return PDX_OK;
}

static int find_slot(const Game *g, int64_t action) {
    for (int k = 0; k < g->nlegal; k++) if (g->legal_index[k] == action) return k;
    return -1;
}

/* play policy slot actions[r] in games[r], then status as above. Returns 0, or a code with *where =
   the first failing row: PDX_E_INDEX, PDX_E_ILLEGAL (no legal move has that slot), PDX_E_WINDOW,
   PDX_E_NOMEM. Every row is checked before any is played, so a failed call changed no game (when
   the rows name distinct games, as native_core.py makes sure: a repeated game is checked against its
   position before the call, and is checked again, and may fail, when played) */
int pdx_core_play(Core *c, int n, const int32_t *games, const int64_t *actions, int claim, int max_plies,
                  int32_t *reason, int32_t *plies, int32_t *where) {
    if (check_games(c, n, games, where)) return PDX_E_INDEX;
    for (int r = 0; r < n; r++) {
        Game *g = &c->g[games[r]];
        int k = find_slot(g, actions[r]);
        int e = k < 0 ? PDX_E_ILLEGAL : room(g, g->legal[k]);
        if (e) { *where = r; return e; }
    }
    for (int r = 0; r < n; r++) {
        Game *g = &c->g[games[r]];
        int k = find_slot(g, actions[r]);
        int e = k < 0 ? PDX_E_ILLEGAL : push(g, g->legal[k]);
        if (e) { *where = r; return e; }
        reason[r] = end_reason(g, claim, max_plies);
        plies[r] = ply(&g->pos);
    }
    return PDX_OK;
}

/* one position's planes packed, 100 words (chesscore.encoding.pack_planes): 0..95 the 8 x 12 history
   bitboards in the mover's frame (mover first, mirrored for Black; zero, or the root fill, before the
   history starts), 96 the repetition bits (bit h), 97 the castling planes 104..107 (bits 0..3), 98 Black
   to move, 99 the halfmove clock */
static void pack_one(const Game *g, uint64_t *o) {
    const Pos *p = &g->pos;
    memset(o, 0, 100 * sizeof *o);
    int us = p->turn, flip = us == 1;
    for (int h = 0; h < HIST; h++) {
        const uint64_t *s;
        int rep;
        if (h < g->nsnap) { int j = (g->head + h) % HIST; s = g->snap[j]; rep = g->rep[j]; }
        else if (g->from_start) continue;
        else { s = g->fill; rep = g->fill_rep; }
        for (int t = 0; t < 6; t++) {
            uint64_t ours = s[us * 6 + t], theirs = s[(!us) * 6 + t];
            if (flip) { ours = __builtin_bswap64(ours); theirs = __builtin_bswap64(theirs); }
            o[12 * h + t] = ours;
            o[12 * h + 6 + t] = theirs;
        }
        if (rep) o[96] |= 1ULL << h;
    }
    uint64_t cr = p->castling;
    int wq = (cr & 1) != 0, wk = (cr >> 7 & 1) != 0, bq = (cr >> 56 & 1) != 0, bk = (cr >> 63 & 1) != 0;
    o[97] = (uint64_t)(flip ? bq : wq) | (uint64_t)(flip ? bk : wk) << 1 | (uint64_t)(flip ? wq : bq) << 2
          | (uint64_t)(flip ? wk : bk) << 3;
    o[98] = (uint64_t)flip;
    o[99] = (uint64_t)p->halfmove;
}

/* the packed planes of the games' current positions, (n, 100) words; 0 or PDX_E_INDEX */
int pdx_core_pack(Core *c, int n, const int32_t *games, uint64_t *out, int32_t *where) {
    if (check_games(c, n, games, where)) return PDX_E_INDEX;
    for (int r = 0; r < n; r++) pack_one(&c->g[games[r]], out + (size_t)r * 100);
    return PDX_OK;
}

static void fill_plane(float *plane, float v) {
    for (int q = 0; q < 64; q++) plane[q] = v;
}

/* Lc0's classic 112 planes (chesscore.encoding), (n, 112, 64) float32, fully overwritten; 0 or
   PDX_E_INDEX */
int pdx_core_encode(Core *c, int n, const int32_t *games, float *out, int32_t *where) {
    if (check_games(c, n, games, where)) return PDX_E_INDEX;
    uint64_t w[100];
    for (int r = 0; r < n; r++) {
        pack_one(&c->g[games[r]], w);
        float *o = out + (size_t)r * 112 * 64;
        memset(o, 0, 112 * 64 * sizeof(float));
        for (int h = 0; h < HIST; h++) {
            for (int k = 0; k < 12; k++)
                for (uint64_t b = w[12 * h + k]; b; b &= b - 1) o[(13 * h + k) * 64 + lsb(b)] = 1.0f;
            if (w[96] >> h & 1) fill_plane(o + (13 * h + 12) * 64, 1.0f);
        }
        for (int k = 0; k < 4; k++) if (w[97] >> k & 1) fill_plane(o + (104 + k) * 64, 1.0f);
        fill_plane(o + 108 * 64, (float)w[98]);
        fill_plane(o + 109 * 64, (float)w[99]);
        fill_plane(o + 111 * 64, 1.0f);
    }
    return PDX_OK;
}

/* legal masks (n, 4288) uint8 (fully overwritten) and the legal policy indices in ascending order,
   (n, LEGAL_STRIDE) int64, padded with the row's first index; count (n,); 0 or PDX_E_INDEX */
int pdx_core_legal(Core *c, int n, const int32_t *games, uint8_t *mask, int64_t *index, int32_t *count,
                   int32_t *where) {
    if (check_games(c, n, games, where)) return PDX_E_INDEX;
    for (int r = 0; r < n; r++) {
        const Game *g = &c->g[games[r]];
        int64_t *ix = index + (size_t)r * LEGAL_STRIDE;
        int k = g->nlegal;
        for (int i = 0; i < k; i++) {      /* insertion sort: k < MAXMOVES, 218 in reachable positions */
            int64_t v = g->legal_index[i];
            int j = i;
            while (j > 0 && ix[j - 1] > v) { ix[j] = ix[j - 1]; j--; }
            ix[j] = v;
        }
        for (int i = k; i < LEGAL_STRIDE; i++) ix[i] = k ? ix[0] : 0;
        count[r] = k;
        if (mask) {
            uint8_t *m = mask + (size_t)r * POLICY;
            memset(m, 0, POLICY);
            for (int i = 0; i < k; i++) m[ix[i]] = 1;
        }
    }
    return PDX_OK;
}

/* the game's moves from its root; returns how many (at most cap are written), or PDX_E_INDEX */
int pdx_core_moves(Core *c, int i, uint16_t *out, int cap) {
    if (bad_game(c, i)) return PDX_E_INDEX;
    const Game *g = &c->g[i];
    for (int k = 0; k < g->nmoves && k < cap; k++) out[k] = g->moves[k];
    return g->nmoves;
}

/* the current position's legal moves (out holds MAXMOVES), in generation order; returns how many, or
   PDX_E_INDEX */
int pdx_core_legal_moves(Core *c, int i, uint16_t *out) {
    if (bad_game(c, i)) return PDX_E_INDEX;
    const Game *g = &c->g[i];
    memcpy(out, g->legal, (size_t)g->nlegal * sizeof *out);
    return g->nlegal;
}

/* occurrences of the current position since the last irreversible move, counting it; or PDX_E_INDEX */
int pdx_core_repetitions(Core *c, int i) { return bad_game(c, i) ? PDX_E_INDEX : c->g[i].reps; }

static int64_t perft(const Pos *p, int depth) {
    uint16_t mv[MAXMOVES];
    int ep, n = gen_legal(p, mv, &ep);
    if (depth == 1) return n;
    int64_t total = 0;
    for (int i = 0; i < n; i++) { Pos q = *p; make(&q, mv[i]); total += perft(&q, depth - 1); }
    return total;
}

/* perft of game i's current position; or PDX_E_INDEX */
int64_t pdx_core_perft(Core *c, int i, int depth) {
    if (bad_game(c, i)) return PDX_E_INDEX;
    return depth <= 0 ? 1 : perft(&c->g[i].pos, depth);
}
