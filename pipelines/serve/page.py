"""The page for people at `/`: one HTML file, everything inline (works offline).

The board is python-chess's SVG from `/board.svg`; moves, filters, history and tablebase
answers come from the server's own APIs.
"""

from __future__ import annotations

import json

from schemas.dimensions import RATING_GROUPS
from schemas.speed import Speed

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>chesspipe explorer</title>
<style>
body{font-family:sans-serif;margin:16px;display:flex;gap:24px;flex-wrap:wrap}
#left{width:360px} #right{min-width:420px}
table{border-collapse:collapse} td,th{padding:2px 6px;text-align:left}
tr.move{cursor:pointer} tr.move:hover{background:#eef}
.bar{display:flex;width:200px;height:14px;border:1px solid #999}
.bar div{height:100%} .w{background:#fff} .d{background:#aaa} .b{background:#333}
fieldset{margin-bottom:8px} #history svg{border:1px solid #ccc}
</style></head><body>
<div id="left">
 <img id="board" width="360" height="360" alt="board">
 <div><button id="back">Back</button> <button id="reset">Start</button></div>
 <div id="line"></div>
 <div id="opening"></div>
 <div id="tablebase"></div>
</div>
<div id="right">
 <fieldset><legend>Speeds</legend><span id="speeds"></span></fieldset>
 <fieldset><legend>Ratings (weaker player's group)</legend><span id="ratings"></span></fieldset>
 <fieldset><legend>Months</legend>
  since <input id="since" size="7" placeholder="YYYY-MM">
  until <input id="until" size="7" placeholder="YYYY-MM"></fieldset>
 <div id="total"></div>
 <table id="moves"><thead><tr><th>move</th><th>games</th><th>white / draw / black</th></tr>
 </thead><tbody></tbody></table>
 <h4>History</h4><div id="history"></div>
</div>
<script>
const SPEEDS=@SPEEDS@;
const RATINGS=@RATINGS@;
let play=[];
function esc(s){return String(s).replace(/[&<>"']/g,c=>({"&":"&amp;","<":"&lt;",">":"&gt;",
 '"':"&quot;","'":"&#39;"})[c]);}
function boxes(id,values){const el=document.getElementById(id);
 for(const v of values){const l=document.createElement("label");
  l.innerHTML='<input type="checkbox" checked value="'+v+'" id="'+id+'-'+v+'"> '+v+' ';
  el.appendChild(l);} el.addEventListener("change",refresh);}
function checked(id){return [...document.querySelectorAll("#"+id+" input:checked")]
 .map(e=>e.value);}
function query(){const p=new URLSearchParams();p.set("play",play.join(","));
 const s=checked("speeds"),r=checked("ratings");
 if(s.length<SPEEDS.length)p.set("speeds",s.join(","));
 if(r.length<RATINGS.length)p.set("ratings",r.join(","));
 for(const k of["since","until"]){const v=document.getElementById(k).value.trim();
  if(v)p.set(k,v);}
 p.set("history","true");return p;}
function bar(w,d,b){const n=w+d+b||1;
 return '<div class="bar"><div class="w" style="width:'+(100*w/n)+'%"></div>'+
 '<div class="d" style="width:'+(100*d/n)+'%"></div><div class="b" style="width:'+
 (100*b/n)+'%"></div></div>';}
function pct(x,n){return n?Math.round(100*x/n)+"%":"-";}
function chart(history){if(!history||!history.length)return "";
 const totals=history.map(h=>h.white+h.draws+h.black),max=Math.max(1,...totals),
 w=Math.max(8,Math.floor(400/history.length));
 let s='<svg width="'+(w*history.length)+'" height="80">';
 history.forEach((h,i)=>{const t=totals[i],y=70*t/max;
  s+='<rect x="'+(i*w+1)+'" y="'+(75-y)+'" width="'+(w-2)+'" height="'+y+
  '" fill="#58a"><title>'+esc(h.month)+': '+t+'</title></rect>';});
 return s+'</svg><div>'+esc(history[0].month)+' .. '+esc(history[history.length-1].month)+
 '</div>';}
async function refresh(){const q=query();
 document.getElementById("board").src="/board.svg?play="+encodeURIComponent(play.join(","));
 document.getElementById("line").textContent="line: "+(play.join(" ")||"(start)");
 const r=await fetch("/lichess?"+q.toString());const data=await r.json();
 const body=document.querySelector("#moves tbody");body.innerHTML="";
 if(!r.ok){document.getElementById("total").textContent=data.error;return;}
 const n=data.white+data.draws+data.black;
 document.getElementById("total").innerHTML='<span id="games">'+n+'</span> games '+
  bar(data.white,data.draws,data.black);
 for(const m of data.moves){const t=m.white+m.draws+m.black,tr=document.createElement("tr");
  tr.className="move";tr.dataset.uci=m.uci;tr.id="move-"+m.uci;
  tr.innerHTML='<td class="san">'+esc(m.san)+'</td><td class="count">'+t+'</td><td>'+
   bar(m.white,m.draws,m.black)+pct(m.white,t)+' / '+pct(m.draws,t)+' / '+pct(m.black,t)+
   '</td>';
  tr.addEventListener("click",()=>{play.push(m.uci);refresh();});body.appendChild(tr);}
 document.getElementById("opening").textContent=data.opening?
  data.opening.eco+" "+data.opening.name:"";
 document.getElementById("history").innerHTML=chart(data.history);
 const pos=await (await fetch("/position?play="+encodeURIComponent(play.join(",")))).json();
 const tb=document.getElementById("tablebase");tb.textContent="";
 if(pos.tablebase){const a=await fetch("/standard?fen="+encodeURIComponent(pos.fen));
  if(a.ok){const t=await a.json();tb.textContent="tablebase: "+t.category+" (DTZ "+t.dtz+
   "), best "+(t.moves.length?t.moves[0].san:"-");}}
 document.body.dataset.ready=play.join(",")+"|"+q.toString();}
document.getElementById("back").onclick=()=>{play.pop();refresh();};
document.getElementById("reset").onclick=()=>{play=[];refresh();};
for(const k of["since","until"])document.getElementById(k).addEventListener("change",refresh);
boxes("speeds",SPEEDS);boxes("ratings",RATINGS);refresh();
</script></body></html>
"""


def _script_list(values: list[str] | list[int]) -> str:
    """Return values as a JavaScript array literal (JSON, without spaces)."""
    return json.dumps(values, separators=(",", ":"))


#: The page, its speeds (as the explorer API names them) and rating groups filled in.
PAGE = _PAGE.replace("@SPEEDS@", _script_list([speed.api_name for speed in Speed])).replace(
    "@RATINGS@", _script_list(list(RATING_GROUPS))
)
