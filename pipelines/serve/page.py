"""The page for people at `/`: one HTML file, everything inline (works offline, no CDN).

A board of its own (vanilla JavaScript: click a piece then a square, or drag it; only the
legal moves the server lists for the position are made), a FEN box and a PGN box, the line in
SAN, tabs for the Lichess, Masters and Player explorers, per move the games, a white/draw/black
bar and the average rating (or, for a player, performance and average opponent), top and recent
games (a Lichess game opens on lichess.org, a masters game is played on the board and its PGN
shown), the opening, the history
chart and the tablebase line for positions within the tables. The URL carries the position,
the tab and the filters: a link reopens the same view and the browser's Back steps back.
"""

from __future__ import annotations

import json

from schemas.dimensions import RATING_GROUPS
from schemas.speed import Speed

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>chesspipe explorer</title>
<style>
body{font-family:sans-serif;margin:16px;display:flex;gap:24px;flex-wrap:wrap;color:#222}
#left{width:400px} #right{min-width:460px;max-width:640px}
#board{display:grid;grid-template-columns:repeat(8,50px);grid-template-rows:repeat(8,50px);
 width:400px;border:2px solid #555;user-select:none;touch-action:none}
.sq{position:relative;font-size:40px;line-height:50px;text-align:center;cursor:pointer}
.light{background:#f0d9b5}.dark{background:#b58863}.sel{outline:3px solid #2a7 inset}
.last{box-shadow:inset 0 0 0 3px rgba(20,85,30,.5)}
.pc{display:block;width:50px;height:50px} .wp{color:#fff;text-shadow:0 0 2px #000,0 0 1px #000}
.bp{color:#000}
#drag{position:fixed;pointer-events:none;font-size:44px;z-index:9}
table{border-collapse:collapse} td,th{padding:2px 6px;text-align:left}
tr.move,tr.game{cursor:pointer} tr.move:hover,tr.game:hover{background:#eef}
.bar{display:inline-flex;width:160px;height:14px;border:1px solid #999;vertical-align:middle}
.bar div{height:100%} .w{background:#fff} .d{background:#aaa} .b{background:#333}
.tabs button{padding:4px 12px} .tabs button.on{font-weight:bold;border-bottom:3px solid #27a}
fieldset{margin-bottom:6px} #history svg{border:1px solid #ccc} textarea{width:390px}
.hidden{display:none} #line{font-family:monospace;margin:4px 0} #notes{color:#666;font-size:90%}
</style></head><body>
<div id="left">
 <div id="board" aria-label="board"></div>
 <div><button id="back">Back</button> <button id="reset">Start</button>
  <button id="flip">Flip</button></div>
 <div id="line"></div>
 <div id="opening"></div>
 <div id="notes"></div>
 <div id="tablebase"></div>
 <label>FEN <input id="fen" size="52"></label>
 <div><label>PGN<br><textarea id="pgn" rows="3" placeholder="paste moves or a game"></textarea>
 </label><br><button id="load-pgn">Play these moves</button></div>
 <div id="message"></div>
 <fieldset id="f-search"><legend>Games with a position</legend>
  <button id="search-here">Games with this position</button><br>
  sub-FEN <input id="subfen" size="30" placeholder="8/8/p7/8/8/1B3N2/8/8">
  <button id="search-subfen">Find</button>
  <div id="found-total"></div><table id="found"><tbody></tbody></table></fieldset>
</div>
<div id="right">
 <div class="tabs"><button id="tab-lichess">Lichess</button><button id="tab-masters">Masters
 </button><button id="tab-player">Player</button></div>
 <fieldset id="f-player"><legend>Player</legend>
  name <input id="player" size="20"> as <select id="color"><option>white</option>
  <option>black</option></select> <button id="player-go">Show</button></fieldset>
 <fieldset id="f-speeds"><legend>Speeds</legend><span id="speeds"></span></fieldset>
 <fieldset id="f-ratings"><legend>Ratings: group of the players' average rating</legend>
  <span id="ratings"></span></fieldset>
 <fieldset id="f-months"><legend id="months-legend">Months</legend>
  since <input id="since" size="7"> until <input id="until" size="7"></fieldset>
 <div id="total"></div>
 <table id="moves"><thead><tr><th>move</th><th>games</th><th id="rating-head">average
  rating</th><th>white / draw / black</th></tr></thead><tbody></tbody></table>
 <h4>Top games</h4><table id="top"><tbody></tbody></table>
 <h4>Recent games</h4><table id="recent"><tbody></tbody></table>
 <h4>History (games a month)</h4><div id="history"></div>
</div>
<div id="drag" class="hidden"></div>
<script>
const SPEEDS=@SPEEDS@, RATINGS=@RATINGS@;
const GLYPH={K:"\\u265A",Q:"\\u265B",R:"\\u265C",B:"\\u265D",N:"\\u265E",P:"\\u265F"};
let st={tab:"lichess",fen:"",play:[],speeds:null,ratings:null,since:"",until:"",player:"",
 color:"white"}, pos={fen:"",legal:[],san:[]}, sel=null, flipped=false, drag=null;
const $=id=>document.getElementById(id);
function esc(s){return String(s).replace(/[&<>"']/g,c=>({"&":"&amp;","<":"&lt;",">":"&gt;",
 '"':"&quot;","'":"&#39;"})[c]);}
function toUrl(){const p=new URLSearchParams();if(st.tab!=="lichess")p.set("tab",st.tab);
 if(st.fen)p.set("fen",st.fen);if(st.play.length)p.set("play",st.play.join(","));
 if(st.speeds)p.set("speeds",st.speeds.join(","));if(st.ratings)p.set("ratings",st.ratings.join(","));
 for(const k of["since","until","player"])if(st[k])p.set(k,st[k]);
 if(st.tab==="player")p.set("color",st.color);return p;}
function fromUrl(){const p=new URLSearchParams(location.search);
 st={tab:p.get("tab")||"lichess",fen:p.get("fen")||"",
  play:(p.get("play")||"").split(",").filter(x=>x),
  speeds:p.get("speeds")?p.get("speeds").split(","):null,
  ratings:p.get("ratings")?p.get("ratings").split(","):null,since:p.get("since")||"",
  until:p.get("until")||"",player:p.get("player")||"",color:p.get("color")||"white"};}
function go(change){Object.assign(st,change);history.pushState(null,"","?"+toUrl());show();}
window.addEventListener("popstate",()=>{fromUrl();show();});
function boxes(id,values){const el=$(id);
 for(const v of values){const l=document.createElement("label");
  l.innerHTML='<input type="checkbox" value="'+v+'" id="'+id+'-'+v+'"> '+v+' ';el.appendChild(l);}
 el.addEventListener("change",()=>{
  const on=[...el.querySelectorAll("input:checked")].map(e=>e.value);
  go({[id]:on.length===values.length?null:on});});}
function syncForm(){for(const[id,values]of[["speeds",SPEEDS],["ratings",RATINGS]])
  for(const v of values)$(id+"-"+v).checked=!st[id]||st[id].includes(String(v));
 $("since").value=st.since;$("until").value=st.until;$("player").value=st.player;
 $("color").value=st.color;if(document.activeElement!==$("fen"))$("fen").value=pos.fen||st.fen;
 for(const t of["lichess","masters","player"])$("tab-"+t).className=st.tab===t?"on":"";
 $("f-player").className=st.tab==="player"?"":"hidden";
 $("f-ratings").className=st.tab==="lichess"?"":"hidden";
 $("f-speeds").className=st.tab==="masters"?"hidden":"";
 $("months-legend").textContent=st.tab==="masters"?"Years (YYYY)":"Months (YYYY-MM)";
 $("rating-head").textContent=st.tab==="player"?"performance (average opponent)":
  "average rating of the movers";}
function squareName(f,r){return "abcdefgh"[f]+(r+1);}
function pieces(fen){const rows=fen.split(" ")[0].split("/"),out={};
 rows.forEach((row,i)=>{let f=0;for(const c of row){if(c>="1"&&c<="8")f+=+c;else{
  out[squareName(f,7-i)]=c;f++;}}});return out;}
function drawBoard(){const b=$("board");b.innerHTML="";const on=pieces(pos.fen);
 const last=st.play.length?st.play[st.play.length-1]:"";
 for(let i=0;i<64;i++){const r=flipped?i>>3:7-(i>>3),f=flipped?7-(i&7):i&7,n=squareName(f,r);
  const d=document.createElement("div");d.className="sq "+((f+r)%2?"light":"dark");
  d.dataset.square=n;d.id="sq-"+n;if(n===sel)d.classList.add("sel");
  if(last&&(last.slice(0,2)===n||last.slice(2,4)===n))d.classList.add("last");
  const p=on[n];if(p){const s=document.createElement("span");
   s.className="pc "+(p===p.toUpperCase()?"wp":"bp");s.dataset.piece=p;
   s.textContent=GLYPH[p.toUpperCase()];d.appendChild(s);}
  b.appendChild(d);}}
function tryMove(from,to){
 const m=pos.legal.find(u=>u.slice(0,4)===from+to&&(u.length===4||u[4]==="q"));
 sel=null;if(m){go({play:[...st.play,m]});return true;}drawBoard();return false;}
function squareAt(x,y){const e=document.elementFromPoint(x,y);const s=e&&e.closest(".sq");
 return s?s.dataset.square:null;}
$("board").addEventListener("pointerdown",e=>{const s=e.target.closest(".sq");if(!s)return;
 const n=s.dataset.square,p=s.querySelector(".pc");
 if(sel&&sel!==n&&pos.legal.some(u=>u.startsWith(sel+n))){tryMove(sel,n);return;}
 if(p&&pos.legal.some(u=>u.startsWith(n))){sel=n;
  for(const q of document.querySelectorAll(".sq"))q.classList.toggle("sel",q===s);
  drag={from:n,moved:false};
  const g=$("drag");g.textContent=p.textContent;g.className=p.className.replace("pc","");
  g.style.left=(e.clientX-22)+"px";g.style.top=(e.clientY-30)+"px";e.preventDefault();}});
document.addEventListener("pointermove",e=>{if(!drag)return;drag.moved=true;const g=$("drag");
 g.classList.remove("hidden");g.style.left=(e.clientX-22)+"px";g.style.top=(e.clientY-30)+"px";});
document.addEventListener("pointerup",e=>{if(!drag)return;const d=drag;drag=null;
 $("drag").className="hidden";const to=squareAt(e.clientX,e.clientY);
 if(d.moved&&to&&to!==d.from)tryMove(d.from,to);});
function bar(w,d,b){const n=w+d+b||1;return '<span class="bar"><div class="w" style="width:'+
 (100*w/n)+'%"></div><div class="d" style="width:'+(100*d/n)+'%"></div>'+
 '<div class="b" style="width:'+(100*b/n)+'%"></div></span>';}
function pct(x,n){return n?Math.round(100*x/n)+"%":"-";}
function chart(h){if(!h||!h.length)return "";const t=h.map(x=>x.white+x.draws+x.black),
 max=Math.max(1,...t),w=Math.max(8,Math.floor(400/h.length));
 let s='<svg width="'+(w*h.length)+'" height="80">';h.forEach((x,i)=>{const y=70*t[i]/max;
  s+='<rect x="'+(i*w+1)+'" y="'+(75-y)+'" width="'+(w-2)+'" height="'+y+'" fill="#58a"><title>'+
  esc(x.month)+': '+t[i]+'</title></rect>';});
 return s+'</svg><div>'+esc(h[0].month)+' .. '+esc(h[h.length-1].month)+'</div>';}
function gameRows(id,games){const body=document.querySelector("#"+id+" tbody");body.innerHTML="";
 for(const g of games||[]){const tr=document.createElement("tr");tr.className="game";
  tr.dataset.id=g.id;const res=g.winner==="white"?"1-0":g.winner==="black"?"0-1":"½-½";
  const href=st.tab==="masters"?"/masters/pgn/"+encodeURIComponent(g.id):
   "https://lichess.org/"+encodeURIComponent(g.id);
  tr.innerHTML='<td>'+esc(g.white.name)+' ('+(g.white.rating??"?")+')</td><td>'+res+
   '</td><td>'+esc(g.black.name)+' ('+(g.black.rating??"?")+')</td><td>'+esc(g.month||g.year||"")+
   '</td><td>'+esc(g.uci)+'</td><td><a href="'+href+'">'+esc(g.id)+'</a></td>';
   tr.addEventListener("click",e=>{if(e.target.tagName==="A")return;
   if(st.tab==="masters")openGame(href);else window.open(href,"_blank");});
  body.appendChild(tr);}}
async function openGame(href){const text=await (await fetch(href)).text();$("pgn").value=text;
 await playPgn();}
async function playPgn(){const r=await fetch("/position?pgn="+encodeURIComponent($("pgn").value));
 const j=await r.json();if(!r.ok){$("message").textContent=j.error;return;}
 go({fen:"",play:j.play});}
function apiQuery(){const p=new URLSearchParams();if(st.fen)p.set("fen",st.fen);
 p.set("play",st.play.join(","));
 if(st.tab!=="masters"&&st.speeds)p.set("speeds",st.speeds.join(","));
 if(st.tab==="lichess"&&st.ratings)p.set("ratings",st.ratings.join(","));
 for(const k of["since","until"])if(st[k])p.set(k,st[k]);
 if(st.tab==="lichess")p.set("history","true");
 if(st.tab==="player"){p.set("player",st.player);p.set("color",st.color);}return p;}
async function show(){const q=apiQuery(),mark=st.play.join(",")+"|"+q.toString();
 const pp=new URLSearchParams();if(st.fen)pp.set("fen",st.fen);pp.set("play",st.play.join(","));
 const pr=await fetch("/position?"+pp);const pj=await pr.json();
 if(!pr.ok){$("message").textContent=pj.error;return;}pos=pj;$("message").textContent="";
 syncForm();drawBoard();$("line").textContent=pos.san.length?pos.san.map((s,i)=>
  (i%2===0?(i/2+1)+". ":"")+s).join(" "):"(the position itself)";
 const tb=$("tablebase");tb.textContent="";
 if(pos.tablebase){const a=await fetch("/standard?fen="+encodeURIComponent(pos.fen));
  if(a.ok){const t=await a.json();tb.textContent="tablebase: "+t.category+" (DTZ "+t.dtz+
   "), best "+(t.moves.length?t.moves[0].san:"-");}}
 const body=document.querySelector("#moves tbody");body.innerHTML="";
 let data={white:0,draws:0,black:0,moves:[],opening:null};
 if(st.tab!=="player"||st.player){const r=await fetch("/"+st.tab+"?"+q);const text=await r.text();
  const lines=text.trim().split("\\n");const got=JSON.parse(lines[lines.length-1]||"{}");
  if(!r.ok){$("total").textContent=got.error;document.body.dataset.ready=mark;return;}data=got;}
 const n=data.white+data.draws+data.black;
 $("total").innerHTML='<span id="games">'+n+'</span> games '+bar(data.white,data.draws,data.black)+
  ' '+pct(data.white,n)+' / '+pct(data.draws,n)+' / '+pct(data.black,n);
 for(const m of data.moves){const t=m.white+m.draws+m.black,tr=document.createElement("tr");
  tr.className="move";tr.dataset.uci=m.uci;tr.id="move-"+m.uci;
  const r=st.tab==="player"?(m.performance??"-")+" ("+(m.averageOpponentRating??"-")+")":
   (m.averageRating??"-");
  tr.innerHTML='<td class="san">'+esc(m.san)+'</td><td class="count">'+t+'</td><td class="rating">'+
   r+'</td><td>'+bar(m.white,m.draws,m.black)+' '+pct(m.white,t)+' / '+pct(m.draws,t)+' / '+
   pct(m.black,t)+'</td>';tr.addEventListener("click",()=>go({play:[...st.play,m.uci]}));
  body.appendChild(tr);}
 $("opening").textContent=data.opening?data.opening.eco+" "+data.opening.name:"";
 $("notes").textContent=(data.notes||[]).join(" ");
 gameRows("top",data.topGames);gameRows("recent",data.recentGames);
 $("history").innerHTML=chart(data.history);document.body.dataset.ready=mark;}
async function findGames(params){const p=new URLSearchParams(params);p.set("limit","50");
 p.set("pgn","true");const r=await fetch("/games/search?"+p);const text=await r.text();
 const body=document.querySelector("#found tbody");body.innerHTML="";
 if(!r.ok){$("found-total").textContent=JSON.parse(text).error;
  document.body.dataset.found="error";return;}
 const games=text.trim()?text.trim().split("\\n").map(l=>JSON.parse(l)):[];
 $("found-total").textContent=games.length+(games.length===50?"+":"")+" games";
 for(const g of games){const tr=document.createElement("tr");tr.className="found";
  tr.dataset.id=g.id;tr.innerHTML='<td>'+esc(g.white)+'</td><td>'+esc(g.result)+'</td><td>'+
   esc(g.black)+'</td><td>'+esc(g.month)+'</td><td>ply '+g.plies.join(",")+'</td>';
  tr.addEventListener("click",()=>openFound(g));body.appendChild(tr);}
 document.body.dataset.found=String(games.length);}
async function openFound(g){$("pgn").value=g.pgn;
 const r=await fetch("/position?pgn="+encodeURIComponent(g.pgn));const j=await r.json();
 if(!r.ok){$("message").textContent=j.error;return;}
 go({fen:"",play:j.play.slice(0,g.plies[g.plies.length-1])});}
$("search-here").onclick=()=>findGames({fen:pos.fen});
$("search-subfen").onclick=()=>findGames({subfen:$("subfen").value.trim()});
$("back").onclick=()=>{if(st.play.length)go({play:st.play.slice(0,-1)});};
$("reset").onclick=()=>go({play:[],fen:""});
$("flip").onclick=()=>{flipped=!flipped;drawBoard();};
$("fen").addEventListener("change",()=>go({fen:$("fen").value.trim(),play:[]}));
$("load-pgn").onclick=playPgn;
for(const k of["since","until"])$(k).addEventListener("change",()=>go({[k]:$(k).value.trim()}));
for(const t of["lichess","masters","player"])$("tab-"+t).onclick=()=>go({tab:t});
$("player-go").onclick=()=>go({player:$("player").value.trim(),color:$("color").value});
boxes("speeds",SPEEDS);boxes("ratings",RATINGS);fromUrl();history.replaceState(null,"","?"+toUrl());
show();
</script></body></html>
"""


def _script_list(values: list[str] | list[int]) -> str:
    """Return values as a JavaScript array literal (JSON, without spaces)."""
    return json.dumps(values, separators=(",", ":"))


#: The page, its speeds (as the explorer API names them) and rating groups filled in.
PAGE = _PAGE.replace("@SPEEDS@", _script_list([speed.api_name for speed in Speed])).replace(
    "@RATINGS@", _script_list([str(group) for group in RATING_GROUPS])
)
