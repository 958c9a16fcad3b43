/* The chess rules of the compiled core (pdx_rules.h). */
#include <stdlib.h>
#include <string.h>

#include "pdx_encoding.h"
#include "pdx_rules.h"

static uint64_t KNIGHT_ATT[64], KING_ATT[64], PAWN_ATT[2][64], RAYS[8][64];
static const int DIRS[8] = {8, -8, 1, -1, 9, 7, -7, -9};   /* N S E W NE NW SE SW */
static const int POSITIVE[8] = {1, 0, 1, 0, 1, 1, 0, 0};
static int inited = 0;

#define FIRST_MOVE_LIST 256   /* a game's first move list; it doubles when full (room) */

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

PDX_INTERNAL int attacked(const Pos *p, int sq, int by) {
    uint64_t occ = all_occ(p);
    const uint64_t *b = p->bb[by];
    return (PAWN_ATT[!by][sq] & b[P]) || (KNIGHT_ATT[sq] & b[N]) || (KING_ATT[sq] & b[K])
        || (bishop_att(sq, occ) & (b[B] | b[Q])) || (rook_att(sq, occ) & (b[R] | b[Q]));
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
    uint16_t buf[MAX_MOVES];
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

PDX_INTERNAL const Pos START = {
    .bb = {{0xFF00ULL, 0x42ULL, 0x24ULL, 0x81ULL, 0x8ULL, 0x10ULL},
           {0xFFULL << 48, 0x42ULL << 56, 0x24ULL << 56, 0x81ULL << 56, 0x8ULL << 56, 0x10ULL << 56}},
    .occ = {0xFFFFULL, 0xFFFFULL << 48},
    .castling = 0x81ULL | 0x81ULL << 56, .ep = -1, .turn = 0, .halfmove = 0, .fullmove = 1};

static int same_pos(const Pos *a, const Pos *b) {
    return !memcmp(a->bb, b->bb, sizeof a->bb) && a->castling == b->castling && a->ep == b->ep
        && a->turn == b->turn;
}

PDX_INTERNAL int setup(Game *g, const Pos *root) {
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

PDX_INTERNAL int valid_root(const Pos *p) {
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

PDX_INTERNAL int room(Game *g, uint16_t m) {
    int from = m & 63, to = m >> 6 & 63, us = g->pos.turn;
    int irreversible = (g->pos.bb[us][P] & BIT(from)) || (g->pos.occ[!us] & BIT(to));
    if (!irreversible && g->nwin >= WINDOW) return PDX_E_WINDOW;
    if (g->nmoves == g->cap_moves) {
        int cap = g->cap_moves ? 2 * g->cap_moves : FIRST_MOVE_LIST;
        uint16_t *mv = ALLOC_FAILS() ? NULL : realloc(g->moves, (size_t)cap * sizeof *mv);
        if (!mv) return PDX_E_NOMEM;
        g->moves = mv;
        g->cap_moves = cap;
    }
    return PDX_OK;
}

PDX_INTERNAL int push(Game *g, uint16_t m) {
    int e = room(g, m);
    if (e) return e;
    g->moves[g->nmoves++] = m;
    make(&g->pos, m);
    return settle(g, g->pos.halfmove == 0);
}

PDX_INTERNAL int scratch_push(Game *g, uint16_t m) {
    int from = m & 63, to = m >> 6 & 63, us = g->pos.turn;
    int irreversible = (g->pos.bb[us][P] & BIT(from)) || (g->pos.occ[!us] & BIT(to));
    if (!irreversible && g->nwin >= WINDOW) return PDX_E_WINDOW;
    make(&g->pos, m);
    return settle(g, g->pos.halfmove == 0);
}

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

PDX_INTERNAL int end_reason(const Game *g, int claim, int max_plies) {
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

PDX_INTERNAL int64_t perft(const Pos *p, int depth) {
    uint16_t mv[MAX_MOVES];
    int ep, n = gen_legal(p, mv, &ep);
    if (depth == 1) return n;
    int64_t total = 0;
    for (int i = 0; i < n; i++) { Pos q = *p; make(&q, mv[i]); total += perft(&q, depth - 1); }
    return total;
}
