<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN">
<context>
    <name>AnswerFlow</name>
    <message>
        <location filename="../../app/gui/answer_flow.py" line="63"/>
        <source>end of answer</source>
        <translation>回答结束</translation>
    </message>
    <message>
        <location filename="../../app/gui/answer_flow.py" line="63"/>
        <source>max new tokens reached</source>
        <translation>已达最大新词元数</translation>
    </message>
    <message>
        <location filename="../../app/gui/answer_flow.py" line="64"/>
        <source>stopped</source>
        <translation>已停止</translation>
    </message>
    <message>
        <location filename="../../app/gui/answer_flow.py" line="64"/>
        <source>context full</source>
        <translation>上下文已满</translation>
    </message>
    <message>
        <location filename="../../app/gui/answer_flow.py" line="65"/>
        <source>Done · {0}</source>
        <translation>完成 · {0}</translation>
    </message>
    <message>
        <location filename="../../app/gui/answer_flow.py" line="70"/>
        <source>Failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <location filename="../../app/gui/answer_flow.py" line="71"/>
        <source>Generation failed: {0}</source>
        <translation>生成失败：{0}</translation>
    </message>
    <message>
        <location filename="../../app/gui/answer_flow.py" line="91"/>
        <source>Generating · round {0}</source>
        <translation>正在生成 · 第 {0} 轮</translation>
    </message>
    <message>
        <location filename="../../app/gui/answer_flow.py" line="119"/>
        <source>The answer was not saved: {0}</source>
        <translation>回答未保存：{0}</translation>
    </message>
</context>
<context>
    <name>ChainLab</name>
    <message>
        <location filename="../../app/gui/lab.py" line="67"/>
        <source>Target p and draft q</source>
        <translation>目标分布 p 与草稿分布 q</translation>
    </message>
    <message>
        <location filename="../../app/gui/lab.py" line="67"/>
        <source>Paper example</source>
        <translation>论文示例</translation>
    </message>
    <message>
        <location filename="../../app/gui/lab.py" line="68"/>
        <source>&lt;b&gt;p, q and the residual&lt;/b&gt; &amp;nbsp; &lt;span style=&apos;color:{0}&apos;&gt;■&lt;/span&gt; p (target) &amp;nbsp;&lt;span style=&apos;color:{1}&apos;&gt;■&lt;/span&gt; q (draft) &amp;nbsp;&lt;span style=&apos;color:{2}&apos;&gt;■&lt;/span&gt; norm(max(p − q, 0))</source>
        <translation>&lt;b&gt;p、q 与残差分布&lt;/b&gt; &amp;nbsp; &lt;span style=&apos;color:{0}&apos;&gt;■&lt;/span&gt; p（目标）&amp;nbsp;&lt;span style=&apos;color:{1}&apos;&gt;■&lt;/span&gt; q（草稿）&amp;nbsp;&lt;span style=&apos;color:{2}&apos;&gt;■&lt;/span&gt; norm(max(p − q, 0))</translation>
    </message>
    <message>
        <location filename="../../app/gui/lab.py" line="71"/>
        <source>Output after simulated rounds (95% band)</source>
        <translation>模拟轮次后的输出（95% 置信带）</translation>
    </message>
    <message>
        <location filename="../../app/gui/lab.py" line="74"/>
        <source>Rounds and cost</source>
        <translation>轮次与成本</translation>
    </message>
    <message>
        <location filename="../../app/gui/lab.py" line="78"/>
        <source>γ (drafts per round)</source>
        <translation>γ（每轮草稿数）</translation>
    </message>
    <message>
        <location filename="../../app/gui/lab.py" line="79"/>
        <source>c (draft step / target step)</source>
        <translation>c（草稿步 / 目标步）</translation>
    </message>
    <message>
        <location filename="../../app/gui/lab.py" line="164"/>
        <source>&lt;b&gt;α&lt;/b&gt; = Σ min(p, q) = &lt;b&gt;{0:.3f}&lt;/b&gt; &amp;nbsp; (simulated {1})</source>
        <translation>&lt;b&gt;α&lt;/b&gt; = Σ min(p, q) = &lt;b&gt;{0:.3f}&lt;/b&gt; &amp;nbsp;（模拟值 {1}）</translation>
    </message>
    <message>
        <location filename="../../app/gui/lab.py" line="165"/>
        <source>&lt;b&gt;residual&lt;/b&gt; norm(max(p − q, 0)) = {0}</source>
        <translation>&lt;b&gt;残差分布&lt;/b&gt; norm(max(p − q, 0)) = {0}</translation>
    </message>
    <message>
        <location filename="../../app/gui/lab.py" line="166"/>
        <source>&lt;b&gt;output, correct rule&lt;/b&gt;: min(p, q) + (1 − α)·residual = &lt;b&gt;{0}&lt;/b&gt;</source>
        <translation>&lt;b&gt;输出，正确规则&lt;/b&gt;：min(p, q) + (1 − α)·残差 = &lt;b&gt;{0}&lt;/b&gt;</translation>
    </message>
    <message>
        <location filename="../../app/gui/lab.py" line="167"/>
        <source>&lt;b&gt;output, wrong rule&lt;/b&gt; (resample from p): min(p, q) + (1 − α)·p = &lt;b&gt;{0}&lt;/b&gt;</source>
        <translation>&lt;b&gt;输出，错误规则&lt;/b&gt;（从 p 重新采样）：min(p, q) + (1 − α)·p = &lt;b&gt;{0}&lt;/b&gt;</translation>
    </message>
    <message>
        <location filename="../../app/gui/lab.py" line="169"/>
        <source>&lt;b&gt;E[tokens per round]&lt;/b&gt; = (1 − α&lt;sup&gt;γ+1&lt;/sup&gt;) / (1 − α) = &lt;b&gt;{0:.3f}&lt;/b&gt; &amp;nbsp; (simulated {1})</source>
        <translation>&lt;b&gt;E[每轮词元数]&lt;/b&gt; = (1 − α&lt;sup&gt;γ+1&lt;/sup&gt;) / (1 − α) = &lt;b&gt;{0:.3f}&lt;/b&gt; &amp;nbsp;（模拟值 {1}）</translation>
    </message>
    <message>
        <location filename="../../app/gui/lab.py" line="171"/>
        <source>&lt;b&gt;speedup&lt;/b&gt; ≈ (1 − α&lt;sup&gt;γ+1&lt;/sup&gt;) / ((1 − α)(1 + γc)) = {0:.3f} / (1 + {1}·{2:.2f}) = &lt;b&gt;{3:.2f}×&lt;/b&gt;</source>
        <translation>&lt;b&gt;加速比&lt;/b&gt; ≈ (1 − α&lt;sup&gt;γ+1&lt;/sup&gt;) / ((1 − α)(1 + γc)) = {0:.3f} / (1 + {1}·{2:.2f}) = &lt;b&gt;{3:.2f}×&lt;/b&gt;</translation>
    </message>
    <message>
        <location filename="../../app/gui/lab.py" line="173"/>
        <source>Simulated rounds: &lt;b&gt;{0}&lt;/b&gt;</source>
        <translation>已模拟轮数：&lt;b&gt;{0}&lt;/b&gt;</translation>
    </message>
    <message>
        <location filename="../../app/gui/lab.py" line="176"/>
        <source>&lt;span style=&apos;color:{0}&apos;&gt;■&lt;/span&gt; correct rule (residual) &amp;nbsp; &lt;span style=&apos;color:{1}&apos;&gt;■&lt;/span&gt; wrong rule (resample from p) &amp;nbsp; — p (the target) &amp;nbsp; - - the wrong rule&apos;s law &amp;nbsp; I 95% band · first token of each round, decided by the engine&apos;s own acceptance code</source>
        <translation>&lt;span style=&apos;color:{0}&apos;&gt;■&lt;/span&gt; 正确规则（残差）&amp;nbsp; &lt;span style=&apos;color:{1}&apos;&gt;■&lt;/span&gt; 错误规则（从 p 重新采样）&amp;nbsp; — p（目标）&amp;nbsp; - - 错误规则的分布 &amp;nbsp; I 95% 置信带 · 每轮的第一个词元，由引擎自身的接受代码判定</translation>
    </message>
</context>
<context>
    <name>ChatFlow</name>
    <message>
        <location filename="../../app/gui/chat_flow.py" line="81"/>
        <source>Could not save the message: {0}</source>
        <translation>无法保存消息：{0}</translation>
    </message>
    <message>
        <location filename="../../app/gui/chat_flow.py" line="109"/>
        <source>The chat template failed: {0}</source>
        <translation>对话模板出错：{0}</translation>
    </message>
    <message>
        <location filename="../../app/gui/chat_flow.py" line="123"/>
        <source>Timing target-only steps …</source>
        <translation>正在计时仅目标模型的步骤…</translation>
    </message>
    <message>
        <location filename="../../app/gui/chat_flow.py" line="123"/>
        <source>Generating …</source>
        <translation>正在生成…</translation>
    </message>
    <message>
        <location filename="../../app/gui/chat_flow.py" line="172"/>
        <source>Answer copied</source>
        <translation>已复制回答</translation>
    </message>
    <message>
        <location filename="../../app/gui/chat_flow.py" line="181"/>
        <source>Editing an earlier message: Send replaces it and everything after it (Esc cancels).</source>
        <translation>正在编辑较早的消息：发送将替换它及其后的全部内容（Esc 取消）。</translation>
    </message>
</context>
<context>
    <name>ChatView</name>
    <message>
        <location filename="../../app/gui/chat_view.py" line="125"/>
        <source>You</source>
        <translation>你</translation>
    </message>
    <message>
        <location filename="../../app/gui/chat_view.py" line="157"/>
        <source>Try an example — one click sends it:</source>
        <translation>试试示例 —— 点击即可发送：</translation>
    </message>
    <message>
        <location filename="../../app/gui/chat_view.py" line="186"/>
        <source>failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <location filename="../../app/gui/chat_view.py" line="188"/>
        <source>stopped</source>
        <translation>已停止</translation>
    </message>
    <message>
        <location filename="../../app/gui/chat_view.py" line="190"/>
        <source>{0} tokens</source>
        <translation>{0} 个词元</translation>
    </message>
    <message>
        <location filename="../../app/gui/chat_view.py" line="198"/>
        <source>{0:.2f}× measured</source>
        <translation>实测 {0:.2f}×</translation>
    </message>
    <message>
        <location filename="../../app/gui/chat_view.py" line="221"/>
        <source>Copy</source>
        <translation>复制</translation>
    </message>
    <message>
        <location filename="../../app/gui/chat_view.py" line="221"/>
        <source>Regenerate</source>
        <translation>重新生成</translation>
    </message>
    <message>
        <location filename="../../app/gui/chat_view.py" line="221"/>
        <source>Edit</source>
        <translation>编辑</translation>
    </message>
    <message>
        <location filename="../../app/gui/answer_header.py" line="55"/>
        <source>Target: {0}
Draft: {1}</source>
        <translation>目标：{0}
草稿：{1}</translation>
    </message>
</context>
<context>
    <name>CompileFlow</name>
    <message>
        <location filename="../../app/gui/compile_flow.py" line="65"/>
        <source>Compiling decoding steps …</source>
        <translation>正在准备解码步骤 …</translation>
    </message>
    <message>
        <location filename="../../app/gui/compile_flow.py" line="71"/>
        <source>Compiling decoding steps … {0} of {1}</source>
        <translation>正在准备解码步骤 … {0} / {1}</translation>
    </message>
    <message>
        <location filename="../../app/gui/compile_flow.py" line="76"/>
        <source>Ready · decoding steps compiled in {0:.1f} s</source>
        <translation>就绪 · 解码步骤准备用时 {0:.1f} 秒</translation>
    </message>
    <message>
        <location filename="../../app/gui/compile_flow.py" line="92"/>
        <source>Compiled decoding is not available: {0}</source>
        <translation>无法使用预先准备的解码步骤：{0}</translation>
    </message>
</context>
<context>
    <name>ControlsPanel</name>
    <message>
        <location filename="../../app/gui/controls.py" line="46"/>
        <source>Models</source>
        <translation>模型</translation>
    </message>
    <message>
        <location filename="../../app/gui/controls.py" line="53"/>
        <source>Target</source>
        <translation>目标模型</translation>
    </message>
    <message>
        <location filename="../../app/gui/controls.py" line="54"/>
        <source>Draft</source>
        <translation>草稿模型</translation>
    </message>
    <message>
        <location filename="../../app/gui/controls.py" line="57"/>
        <source>Decoding · applies at the next round</source>
        <translation>解码 · 下一轮生效</translation>
    </message>
    <message>
        <location filename="../../app/gui/controls.py" line="60"/>
        <source>auto</source>
        <translation>自动</translation>
    </message>
    <message>
        <location filename="../../app/gui/controls.py" line="61"/>
        <source>draft length γ per round; auto re-chooses it every round from the measured acceptance, draft cost and verify cost</source>
        <translation>每轮草稿长度 γ；自动模式每轮根据实测接受率、草稿成本和验证成本重新选择</translation>
    </message>
    <message>
        <location filename="../../app/gui/controls.py" line="65"/>
        <source>0 = greedy</source>
        <translation>0 = 贪心</translation>
    </message>
    <message>
        <location filename="../../app/gui/controls.py" line="66"/>
        <source>off</source>
        <translation>关闭</translation>
    </message>
    <message>
        <location filename="../../app/gui/controls.py" line="70"/>
        <source>fixed</source>
        <translation>固定</translation>
    </message>
    <message>
        <location filename="../../app/gui/controls.py" line="75"/>
        <source>γ (draft length)</source>
        <translation>γ（草稿长度）</translation>
    </message>
    <message>
        <location filename="../../app/gui/controls.py" line="76"/>
        <source>Temperature</source>
        <translation>温度</translation>
    </message>
    <message>
        <location filename="../../app/gui/controls.py" line="79"/>
        <source>Seed</source>
        <translation>随机种子</translation>
    </message>
    <message>
        <location filename="../../app/gui/controls.py" line="80"/>
        <source>Max new tokens</source>
        <translation>最大新词元数</translation>
    </message>
    <message>
        <location filename="../../app/gui/controls.py" line="83"/>
        <source>View</source>
        <translation>视图</translation>
    </message>
    <message>
        <location filename="../../app/gui/controls.py" line="85"/>
        <source>Show rejected drafts (struck through)</source>
        <translation>显示被拒绝的草稿（删除线）</translation>
    </message>
    <message>
        <location filename="../../app/gui/controls.py" line="90"/>
        <source>Engine</source>
        <translation>引擎</translation>
    </message>
    <message>
        <location filename="../../app/gui/controls.py" line="92"/>
        <source>Compile decoding steps (static caches, torch.compile)</source>
        <translation>预先准备解码步骤（固定缓存，torch.compile）</translation>
    </message>
    <message>
        <location filename="../../app/gui/controls.py" line="94"/>
        <source>Captures the draft and verify steps as CUDA graphs on a GPU. Compiling takes a minute or more before the next message; the output is the same token for token.</source>
        <translation>在 GPU 上将草稿步骤与验证步骤记录为 CUDA 图。第一次准备需要一分以上的时间，完成后可以发送下一条消息；输出的词元完全一样。</translation>
    </message>
    <message>
        <location filename="../../app/gui/controls.py" line="130"/>
        <source>auto (fastest measured on this machine)</source>
        <translation>自动（本机实测最快）</translation>
    </message>
    <message>
        <location filename="../../app/gui/controls.py" line="137"/>
        <source>none (target only)</source>
        <translation>无（仅目标模型）</translation>
    </message>
    <message>
        <location filename="../../app/gui/controls.py" line="140"/>
        <source>Browse folder…</source>
        <translation>浏览文件夹…</translation>
    </message>
    <message>
        <location filename="../../app/gui/controls.py" line="141"/>
        <source>Browse .gguf file…</source>
        <translation>浏览 .gguf 文件…</translation>
    </message>
    <message>
        <location filename="../../app/gui/controls.py" line="154"/>
        <source>{0} · α {1} (T=0), {2} (T=0.7) · c {3}</source>
        <translation>{0} · α {1}（T=0），{2}（T=0.7）· c {3}</translation>
    </message>
    <message>
        <location filename="../../app/gui/controls.py" line="158"/>
        <source>trained draft in {0}</source>
        <translation>训练好的草稿模型，位于 {0}</translation>
    </message>
    <message>
        <location filename="../../app/gui/controls.py" line="172"/>
        <source>Model folder (save_pretrained)</source>
        <translation>模型文件夹（save_pretrained）</translation>
    </message>
    <message>
        <location filename="../../app/gui/controls.py" line="174"/>
        <source>GGUF model</source>
        <translation>GGUF 模型</translation>
    </message>
    <message>
        <location filename="../../app/gui/controls.py" line="174"/>
        <source>GGUF (*.gguf)</source>
        <translation>GGUF 文件 (*.gguf)</translation>
    </message>
</context>
<context>
    <name>ConversationsPanel</name>
    <message>
        <location filename="../../app/gui/conversations.py" line="38"/>
        <source>New chat</source>
        <translation>新建对话</translation>
    </message>
    <message>
        <location filename="../../app/gui/conversations.py" line="41"/>
        <source>Search titles…</source>
        <translation>搜索标题…</translation>
    </message>
    <message>
        <location filename="../../app/gui/conversations.py" line="70"/>
        <source>Untitled</source>
        <translation>无标题</translation>
    </message>
    <message>
        <location filename="../../app/gui/conversations.py" line="72"/>
        <source>{0} messages</source>
        <translation>{0} 条消息</translation>
    </message>
    <message>
        <location filename="../../app/gui/conversations.py" line="89"/>
        <source>Rename…</source>
        <translation>重命名…</translation>
    </message>
    <message>
        <location filename="../../app/gui/conversations.py" line="90"/>
        <source>Export as HTML…</source>
        <translation>导出为 HTML…</translation>
    </message>
    <message>
        <location filename="../../app/gui/conversations.py" line="91"/>
        <source>Export as Markdown…</source>
        <translation>导出为 Markdown…</translation>
    </message>
    <message>
        <location filename="../../app/gui/conversations.py" line="93"/>
        <source>Delete</source>
        <translation>删除</translation>
    </message>
    <message>
        <location filename="../../app/gui/conversations.py" line="98"/>
        <source>Rename conversation</source>
        <translation>重命名对话</translation>
    </message>
    <message>
        <location filename="../../app/gui/conversations.py" line="98"/>
        <source>Title:</source>
        <translation>标题：</translation>
    </message>
    <message>
        <location filename="../../app/gui/conversations.py" line="105"/>
        <source>Delete conversation</source>
        <translation>删除对话</translation>
    </message>
    <message>
        <location filename="../../app/gui/conversations.py" line="105"/>
        <source>Delete “{0}”? This cannot be undone.</source>
        <translation>删除“{0}”？此操作无法撤销。</translation>
    </message>
    <message>
        <location filename="../../app/gui/conversations.py" line="114"/>
        <source>HTML page (*.html)</source>
        <translation>HTML 网页 (*.html)</translation>
    </message>
    <message>
        <location filename="../../app/gui/conversations.py" line="114"/>
        <source>Markdown (*.md)</source>
        <translation>Markdown 文件 (*.md)</translation>
    </message>
    <message>
        <location filename="../../app/gui/conversations.py" line="115"/>
        <source>Export conversation</source>
        <translation>导出对话</translation>
    </message>
</context>
<context>
    <name>DistillDialog</name>
    <message>
        <location filename="../../app/gui/distill_dialog.py" line="70"/>
        <source>Train a draft for {0}</source>
        <translation>为 {0} 训练草稿模型</translation>
    </message>
    <message>
        <location filename="../../app/gui/distill_dialog.py" line="73"/>
        <source>Trains a small feature draft (one decoder layer reading the target&apos;s own features) from the target&apos;s answers to a broad set of prompts, then measures its acceptance on held-out prompts. The app stays usable for reading; sending waits until training ends.</source>
        <translation>用目标模型对大量提示的回答训练一个小型特征草稿模型（一个读取目标模型自身特征的解码层），然后在留出的提示上测量其接受率。训练期间仍可阅读；发送需等训练结束。</translation>
    </message>
    <message>
        <location filename="../../app/gui/distill_dialog.py" line="80"/>
        <source>optional: your own prompts, one a line</source>
        <translation>可选：你自己的提示，每行一个</translation>
    </message>
    <message>
        <location filename="../../app/gui/distill_dialog.py" line="81"/>
        <source>optional: a folder of text files</source>
        <translation>可选：一个文本文件夹</translation>
    </message>
    <message>
        <location filename="../../app/gui/distill_dialog.py" line="82"/>
        <location filename="../../app/gui/distill_dialog.py" line="84"/>
        <source>Browse…</source>
        <translation>浏览…</translation>
    </message>
    <message>
        <location filename="../../app/gui/distill_dialog.py" line="86"/>
        <source>Budget (data included)</source>
        <translation>预算（含数据）</translation>
    </message>
    <message>
        <location filename="../../app/gui/distill_dialog.py" line="87"/>
        <source>Head rows (vocabulary subset)</source>
        <translation>输出头行数（词表子集）</translation>
    </message>
    <message>
        <location filename="../../app/gui/distill_dialog.py" line="88"/>
        <source>Seed</source>
        <translation>随机种子</translation>
    </message>
    <message>
        <location filename="../../app/gui/distill_dialog.py" line="89"/>
        <location filename="../../app/gui/distill_dialog.py" line="185"/>
        <source>Prompts file</source>
        <translation>提示文件</translation>
    </message>
    <message>
        <location filename="../../app/gui/distill_dialog.py" line="90"/>
        <location filename="../../app/gui/distill_dialog.py" line="190"/>
        <source>Text folder</source>
        <translation>文本文件夹</translation>
    </message>
    <message>
        <location filename="../../app/gui/distill_dialog.py" line="99"/>
        <source>Not started</source>
        <translation>未开始</translation>
    </message>
    <message>
        <location filename="../../app/gui/distill_dialog.py" line="106"/>
        <source>Train</source>
        <translation>训练</translation>
    </message>
    <message>
        <location filename="../../app/gui/distill_dialog.py" line="107"/>
        <source>Cancel training</source>
        <translation>取消训练</translation>
    </message>
    <message>
        <location filename="../../app/gui/distill_dialog.py" line="108"/>
        <source>Use this draft</source>
        <translation>使用此草稿模型</translation>
    </message>
    <message>
        <location filename="../../app/gui/distill_dialog.py" line="109"/>
        <source>Close</source>
        <translation>关闭</translation>
    </message>
    <message>
        <location filename="../../app/gui/distill_dialog.py" line="139"/>
        <source>Waiting for the engine …</source>
        <translation>正在等待引擎…</translation>
    </message>
    <message>
        <location filename="../../app/gui/distill_dialog.py" line="145"/>
        <source>Stopping: the best checkpoint so far is kept …</source>
        <translation>正在停止：保留目前最好的检查点…</translation>
    </message>
    <message>
        <location filename="../../app/gui/distill_dialog.py" line="163"/>
        <source>Stopped early; the best checkpoint was kept.</source>
        <translation>已提前停止；保留了最好的检查点。</translation>
    </message>
    <message>
        <location filename="../../app/gui/distill_dialog.py" line="164"/>
        <source>Done.</source>
        <translation>完成。</translation>
    </message>
    <message>
        <location filename="../../app/gui/distill_dialog.py" line="165"/>
        <source>{0} α {1} (greedy), {2} (T = 0.7), c {3}. Saved in {4}</source>
        <translation>{0} α {1}（贪心），{2}（T = 0.7），c {3}。已保存到 {4}</translation>
    </message>
    <message>
        <location filename="../../app/gui/distill_dialog.py" line="169"/>
        <source>Cancelled before a checkpoint was written; nothing was saved.</source>
        <translation>在写入检查点之前已取消；没有保存任何内容。</translation>
    </message>
    <message>
        <location filename="../../app/gui/distill_dialog.py" line="170"/>
        <source>Finished</source>
        <translation>已完成</translation>
    </message>
    <message>
        <location filename="../../app/gui/distill_dialog.py" line="176"/>
        <source>Failed</source>
        <translation>失败</translation>
    </message>
</context>
<context>
    <name>Drafters</name>
    <message>
        <location filename="../../app/drafting/registry.py" line="71"/>
        <source>prompt lookup (n-grams from the prompt)</source>
        <translation>提示查找（取自提示的 n-gram）</translation>
    </message>
    <message>
        <location filename="../../app/drafting/registry.py" line="73"/>
        <source>suffix decoding (your chats and the model&apos;s own answers)</source>
        <translation>后缀解码（你的对话与模型自己的回答）</translation>
    </message>
    <message>
        <location filename="../../app/drafting/registry.py" line="75"/>
        <source>reduced-precision copy of the target</source>
        <translation>目标模型的低精度副本</translation>
    </message>
</context>
<context>
    <name>Examples</name>
    <message>
        <location filename="../../app/gui/examples.py" line="29"/>
        <source>Mostly accepted: the self-draft agrees with the target</source>
        <translation>大多被接受：自草稿与目标模型一致</translation>
    </message>
    <message>
        <location filename="../../app/gui/examples.py" line="31"/>
        <source>Many corrections: prompt lookup guessing at a poem</source>
        <translation>大量修正：提示查找在猜一首诗</translation>
    </message>
    <message>
        <location filename="../../app/gui/examples.py" line="33"/>
        <source>Prompt lookup shines: copying from the prompt</source>
        <translation>提示查找大显身手：从提示中复制</translation>
    </message>
    <message>
        <location filename="../../app/gui/examples.py" line="95"/>
        <source>{0} is predicted at {1:.2f}× target-only on this machine on average, slower</source>
        <translation>{0} 在本机上预测为仅目标模型的 {1:.2f}×（各对话的均值），更慢</translation>
    </message>
    <message>
        <location filename="../../app/gui/examples.py" line="104"/>
        <source>measured here: {0:.2f}× target-only, slower</source>
        <translation>本机实测：仅目标模型的 {0:.2f}×，更慢</translation>
    </message>
    <message>
        <location filename="../../app/gui/examples.py" line="106"/>
        <source>measured here: {0:.2f}× target-only</source>
        <translation>本机实测：仅目标模型的 {0:.2f}×</translation>
    </message>
    <message>
        <location filename="../../app/gui/examples.py" line="117"/>
        <source>This example shows the colours, not a speedup: {0}</source>
        <translation>此示例只为显示词元的状态，不是加速：{0}</translation>
    </message>
</context>
<context>
    <name>GraphicsScene</name>
    <message>
        <location filename="../../app/gui/i18n.py" line="85"/>
        <source>Export...</source>
        <translation>导出…</translation>
    </message>
</context>
<context>
    <name>HistoryFlow</name>
    <message>
        <location filename="../../app/gui/history_flow.py" line="79"/>
        <source>Nothing to export yet</source>
        <translation>暂无可导出的内容</translation>
    </message>
    <message>
        <location filename="../../app/gui/history_flow.py" line="87"/>
        <source>Export plots into folder</source>
        <translation>将图表导出到文件夹</translation>
    </message>
    <message>
        <location filename="../../app/gui/history_flow.py" line="90"/>
        <source>Wrote {0} files to {1}</source>
        <translation>已写入 {0} 个文件到 {1}</translation>
    </message>
</context>
<context>
    <name>LabTab</name>
    <message>
        <location filename="../../app/gui/lab_panel.py" line="109"/>
        <source>Tokens</source>
        <translation>词元数</translation>
    </message>
    <message>
        <location filename="../../app/gui/lab_panel.py" line="125"/>
        <location filename="../../app/gui/lab_panel.py" line="215"/>
        <source>Run</source>
        <translation>运行</translation>
    </message>
    <message>
        <location filename="../../app/gui/lab_panel.py" line="126"/>
        <source>Reset counts</source>
        <translation>重置计数</translation>
    </message>
    <message>
        <location filename="../../app/gui/lab_panel.py" line="215"/>
        <source>Pause</source>
        <translation>暂停</translation>
    </message>
</context>
<context>
    <name>LabWindow</name>
    <message>
        <location filename="../../app/gui/lab.py" line="42"/>
        <source>SpecLens Lab — why speculative sampling is exact</source>
        <translation>SpecLens 实验室 —— 为什么推测采样是精确的</translation>
    </message>
    <message>
        <location filename="../../app/gui/lab.py" line="46"/>
        <source>Chain: one draft, sampled from q</source>
        <translation>链：一个草稿词元，从 q 采样</translation>
    </message>
    <message>
        <location filename="../../app/gui/lab.py" line="47"/>
        <source>Tree: three candidates at one node</source>
        <translation>树：一个节点上的三个候选</translation>
    </message>
</context>
<context>
    <name>Layout</name>
    <message>
        <location filename="../../app/gui/window_layout.py" line="47"/>
        <source>System prompt (optional) — sent before every turn of this chat</source>
        <translation>系统提示词（可选）—— 在本对话的每一轮之前发送</translation>
    </message>
    <message>
        <location filename="../../app/gui/window_layout.py" line="53"/>
        <source>Ask something…   (Ctrl+Enter sends, Esc stops)</source>
        <translation>问点什么…   （Ctrl+Enter 发送，Esc 停止）</translation>
    </message>
    <message>
        <location filename="../../app/gui/window_layout.py" line="56"/>
        <source>Send</source>
        <translation>发送</translation>
    </message>
    <message>
        <location filename="../../app/gui/window_layout.py" line="57"/>
        <source>Stop</source>
        <translation>停止</translation>
    </message>
    <message>
        <location filename="../../app/gui/window_layout.py" line="96"/>
        <source>Conversations</source>
        <translation>对话</translation>
    </message>
    <message>
        <location filename="../../app/gui/window_layout.py" line="97"/>
        <source>Controls</source>
        <translation>控制</translation>
    </message>
    <message>
        <location filename="../../app/gui/window_layout.py" line="98"/>
        <source>Statistics</source>
        <translation>统计</translation>
    </message>
    <message>
        <location filename="../../app/gui/window_layout.py" line="99"/>
        <source>Step-through</source>
        <translation>逐轮查看</translation>
    </message>
</context>
<context>
    <name>LoadPhases</name>
    <message>
        <location filename="../../app/gui/load_phases.py" line="18"/>
        <source>Loading torch and transformers</source>
        <translation>正在加载 torch 和 transformers</translation>
    </message>
    <message>
        <location filename="../../app/gui/load_phases.py" line="28"/>
        <source>Dequantising the GGUF (first run only): {0}</source>
        <translation>正在解码 GGUF 文件（仅首次运行）：{0}</translation>
    </message>
    <message>
        <location filename="../../app/gui/load_phases.py" line="31"/>
        <source>Loading the target: {0}</source>
        <translation>正在加载目标模型：{0}</translation>
    </message>
    <message>
        <location filename="../../app/gui/load_phases.py" line="33"/>
        <source>Timing the drafters on this machine (first run only): {0}</source>
        <translation>正在本机上为草稿模型计时（仅首次运行）：{0}</translation>
    </message>
    <message>
        <location filename="../../app/gui/load_phases.py" line="35"/>
        <source>Preparing the draft: {0}</source>
        <translation>正在准备草稿模型：{0}</translation>
    </message>
</context>
<context>
    <name>MainWindow</name>
    <message>
        <location filename="../../app/gui/main_window.py" line="126"/>
        <source>SpecLens — exact speculative decoding</source>
        <translation>SpecLens —— 精确的推测解码</translation>
    </message>
    <message>
        <location filename="../../app/gui/main_window.py" line="154"/>
        <source>History unavailable, this session is not saved: {0}</source>
        <translation>历史记录不可用，本次会话不会保存：{0}</translation>
    </message>
    <message>
        <location filename="../../app/gui/main_window.py" line="200"/>
        <source>Serve on localhost</source>
        <translation>在本机开放 API</translation>
    </message>
    <message>
        <location filename="../../app/gui/main_window.py" line="280"/>
        <source>The language changes when SpecLens next starts.</source>
        <translation>语言将在 SpecLens 下次启动时更改。</translation>
    </message>
</context>
<context>
    <name>Menus</name>
    <message>
        <location filename="../../app/gui/menus.py" line="13"/>
        <source>&amp;File</source>
        <translation>文件(&amp;F)</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="14"/>
        <source>New chat</source>
        <translation>新建对话</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="15"/>
        <source>Export conversation as HTML…</source>
        <translation>将对话导出为 HTML…</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="16"/>
        <source>Export conversation as Markdown…</source>
        <translation>将对话导出为 Markdown…</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="17"/>
        <source>Export plots (PNG, SVG, CSV)…</source>
        <translation>导出图表（PNG、SVG、CSV）…</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="19"/>
        <source>Open recording…</source>
        <translation>打开录制…</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="20"/>
        <source>Save recording…</source>
        <translation>保存录制…</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="22"/>
        <source>Quit</source>
        <translation>退出</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="23"/>
        <source>&amp;Chat</source>
        <translation>对话(&amp;C)</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="24"/>
        <source>Send</source>
        <translation>发送</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="25"/>
        <source>Stop</source>
        <translation>停止</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="26"/>
        <source>Regenerate last answer</source>
        <translation>重新生成最后的回答</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="27"/>
        <source>Copy last answer</source>
        <translation>复制最后的回答</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="29"/>
        <source>Race: speculative against target only</source>
        <translation>比赛：推测解码对仅目标模型</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="31"/>
        <source>Race: current draft against prompt lookup</source>
        <translation>比赛：当前草稿对提示查找</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="32"/>
        <source>Race: current draft as a chain against it as a token tree</source>
        <translation>比赛：当前草稿的链对其词元树</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="35"/>
        <source>&amp;Models</source>
        <translation>模型(&amp;M)</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="36"/>
        <source>Recommended pairs…</source>
        <translation>推荐的模型组合…</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="37"/>
        <source>Train a draft…</source>
        <translation>训练草稿模型…</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="38"/>
        <source>Measure this machine again</source>
        <translation>重新测量本机</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="41"/>
        <source>Target dtype</source>
        <translation>目标模型精度</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="44"/>
        <source>Automatic (fastest exact kernels)</source>
        <translation>自动（最快且精确）</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="50"/>
        <source>Token trees</source>
        <translation>词元树</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="52"/>
        <source>Automatic (a tree where it is measured faster)</source>
        <translation>自动（实测更快时用树）</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="53"/>
        <source>On (always a tree)</source>
        <translation>开（总是用树）</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="53"/>
        <source>Off (chains only)</source>
        <translation>关（只用链）</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="61"/>
        <source>&amp;View</source>
        <translation>视图(&amp;V)</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="62"/>
        <source>Larger text</source>
        <translation>放大文字</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="64"/>
        <source>Smaller text</source>
        <translation>缩小文字</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="65"/>
        <source>Reset text size</source>
        <translation>重置文字大小</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="66"/>
        <source>Presentation</source>
        <translation>演示模式</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="68"/>
        <source>Theme</source>
        <translation>主题</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="71"/>
        <location filename="../../app/gui/menus.py" line="82"/>
        <source>System</source>
        <translation>跟随系统</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="71"/>
        <source>Light</source>
        <translation>浅色</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="71"/>
        <source>Dark</source>
        <translation>深色</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="77"/>
        <source>Step through rounds</source>
        <translation>逐轮查看</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="78"/>
        <source>Lab…</source>
        <translation>实验室…</translation>
    </message>
    <message>
        <location filename="../../app/gui/menus.py" line="79"/>
        <source>Language</source>
        <translation>语言</translation>
    </message>
</context>
<context>
    <name>ModelFlow</name>
    <message>
        <location filename="../../app/gui/training_flow.py" line="36"/>
        <source>Load a target first</source>
        <translation>请先加载目标模型</translation>
    </message>
    <message>
        <location filename="../../app/gui/training_flow.py" line="65"/>
        <source>Training a draft …</source>
        <translation>正在训练草稿模型…</translation>
    </message>
    <message>
        <location filename="../../app/gui/training_flow.py" line="81"/>
        <source>Draft training finished</source>
        <translation>草稿模型训练完成</translation>
    </message>
    <message>
        <location filename="../../app/gui/model_flow.py" line="185"/>
        <source>Switched to target-only: the last answer ran at {0:.2f}× target-only with {1} (against target-only steps timed in this chat).</source>
        <translation>已切换为仅目标模型：上一个回答使用 {1} 时只有仅目标模型的 {0:.2f}×（与本对话中计时的仅目标模型步骤相比）。</translation>
    </message>
    <message>
        <location filename="../../app/gui/model_flow.py" line="188"/>
        <source>Switched to target-only: the live acceptance at draft position 1 (α₁ {0:.2f}) and draft cost (c {1:.2f}) predict {2} at {3:.2f}× target-only on this machine.</source>
        <translation>已切换为仅目标模型：实时的第 1 个草稿位置接受率 α（{0:.2f}）和草稿成本（c {1:.2f}）预测 {2} 在本机上只有仅目标模型的 {3:.2f}×。</translation>
    </message>
    <message>
        <location filename="../../app/gui/model_flow.py" line="174"/>
        <source>Running target-only: no draft is predicted to be faster here. {0}</source>
        <translation>正在仅用目标模型运行：预计没有草稿模型能在此更快。{0}</translation>
    </message>
    <message>
        <location filename="../../app/gui/model_flow.py" line="75"/>
        <source>Loading models …</source>
        <translation>正在加载模型…</translation>
    </message>
    <message>
        <location filename="../../app/gui/model_flow.py" line="92"/>
        <source>slower</source>
        <translation>更慢</translation>
    </message>
    <message>
        <location filename="../../app/gui/model_flow.py" line="93"/>
        <source>faster</source>
        <translation>更快</translation>
    </message>
    <message>
        <location filename="../../app/gui/model_flow.py" line="94"/>
        <source>Live rounds ran {0:.0f}% {1} than this machine&apos;s profile (median of {2} rounds): the next load measures it again, or now with Models ▸ Measure this machine again.</source>
        <translation>实时轮次比本机的测量{1} {0:.0f}%（{2} 轮的中位数）：下次加载时会重新测量，或者这就使用 模型 → 重新测量本机。</translation>
    </message>
    <message>
        <location filename="../../app/gui/model_flow.py" line="144"/>
        <source>Ready · loaded in {0:.1f} s</source>
        <translation>就绪 · 加载用时 {0:.1f} 秒</translation>
    </message>
    <message>
        <location filename="../../app/gui/model_flow.py" line="156"/>
        <source>Could not load the model</source>
        <translation>无法加载模型</translation>
    </message>
    <message>
        <location filename="../../app/gui/model_flow.py" line="160"/>
        <source>Could not load the models: {0} — choose another target or draft on the right.</source>
        <translation>无法加载模型：{0} —— 请在右侧选择其他目标模型或草稿模型。</translation>
    </message>
    <message>
        <location filename="../../app/gui/answer_header.py" line="21"/>
        <source>none (target only)</source>
        <translation>无（仅目标模型）</translation>
    </message>
    <message>
        <location filename="../../app/gui/answer_header.py" line="36"/>
        <source>target only</source>
        <translation>仅目标模型</translation>
    </message>
    <message>
        <location filename="../../app/gui/model_flow.py" line="177"/>
        <source>Slower than target-only: {0} is predicted at {1:.2f}×, because {2}. Choose draft &apos;auto&apos;.</source>
        <translation>比仅目标模型更慢：预测 {0} 为 {1:.2f}×，原因是 {2}。请选择草稿“自动”。</translation>
    </message>
    <message>
        <location filename="../../app/gui/model_flow.py" line="196"/>
        <source>Target-only (switched live)</source>
        <translation>仅目标模型（已实时切换）</translation>
    </message>
    <message>
        <location filename="../../app/gui/model_flow.py" line="200"/>
        <source>cached timings</source>
        <translation>缓存的计时</translation>
    </message>
    <message>
        <location filename="../../app/gui/model_flow.py" line="200"/>
        <source>timed at load</source>
        <translation>加载时计时</translation>
    </message>
    <message>
        <location filename="../../app/gui/model_flow.py" line="204"/>
        <source>target-only</source>
        <translation>仅目标模型</translation>
    </message>
    <message>
        <location filename="../../app/gui/model_flow.py" line="205"/>
        <source>Target-only: {0}</source>
        <translation>仅目标模型：{0}</translation>
    </message>
    <message>
        <location filename="../../app/gui/model_flow.py" line="208"/>
        <source>tree {0} · {1:.1f} tokens a round · auto&apos;s plan {2:.2f}×</source>
        <translation>树 {0} · 每轮 {1:.1f} 个词元 · auto 的计划 {2:.2f}×</translation>
    </message>
    <message>
        <location filename="../../app/gui/model_flow.py" line="210"/>
        <source>γ auto {0}</source>
        <translation>γ 自动 {0}</translation>
    </message>
    <message>
        <location filename="../../app/gui/model_flow.py" line="210"/>
        <source>γ fixed</source>
        <translation>γ 固定</translation>
    </message>
    <message>
        <location filename="../../app/gui/model_flow.py" line="212"/>
        <source>Slower than target-only: auto&apos;s plan {0:.2f}× · {1}</source>
        <translation>比仅目标模型更慢：auto 的计划 {0:.2f}× · {1}</translation>
    </message>
    <message>
        <location filename="../../app/gui/model_flow.py" line="214"/>
        <source>{0} · auto&apos;s plan {1:.2f}×</source>
        <translation>{0} · auto 的计划 {1:.2f}×</translation>
    </message>
</context>
<context>
    <name>OutcomePanel</name>
    <message>
        <location filename="../../app/gui/step_panels.py" line="192"/>
        <source>&lt;b&gt;Rejected at position {0}&lt;/b&gt;: the next token comes from the residual norm(max(p − q, 0)) → &lt;span style=&apos;color:{1}&apos;&gt;&lt;b&gt;{2}&lt;/b&gt;&lt;/span&gt;</source>
        <translation>&lt;b&gt;在第 {0} 个位置被拒绝&lt;/b&gt;：下一个词元来自残差分布 norm(max(p − q, 0)) → &lt;span style=&apos;color:{1}&apos;&gt;&lt;b&gt;{2}&lt;/b&gt;&lt;/span&gt;</translation>
    </message>
    <message>
        <location filename="../../app/gui/step_panels.py" line="195"/>
        <source>Where q gave more than p the residual is 0, so the mass the test took away returns exactly where p needs it.</source>
        <translation>在 q 大于 p 的地方残差为 0，因此检验拿走的概率质量恰好回到 p 需要的地方。</translation>
    </message>
    <message>
        <location filename="../../app/gui/step_panels.py" line="199"/>
        <source>&lt;b&gt;All {0} drafts accepted&lt;/b&gt;: a bonus token from p&lt;sub&gt;{1}&lt;/sub&gt; → &lt;span style=&apos;color:{2}&apos;&gt;&lt;b&gt;{3}&lt;/b&gt;&lt;/span&gt;</source>
        <translation>&lt;b&gt;全部 {0} 个草稿被接受&lt;/b&gt;：从 p&lt;sub&gt;{1}&lt;/sub&gt; 采样一个奖励词元 → &lt;span style=&apos;color:{2}&apos;&gt;&lt;b&gt;{3}&lt;/b&gt;&lt;/span&gt;</translation>
    </message>
    <message>
        <location filename="../../app/gui/step_panels.py" line="201"/>
        <source>The target&apos;s pass over the drafts already computed this distribution: one token more for free.</source>
        <translation>目标模型对草稿的那次前向计算已经算出了这个分布：白得一个词元。</translation>
    </message>
    <message>
        <location filename="../../app/gui/step_panels.py" line="204"/>
        <source>&lt;b&gt;No draft&lt;/b&gt;: the token comes from p → &lt;b&gt;{0}&lt;/b&gt;</source>
        <translation>&lt;b&gt;没有草稿&lt;/b&gt;：词元来自 p → &lt;b&gt;{0}&lt;/b&gt;</translation>
    </message>
    <message>
        <location filename="../../app/gui/step_panels.py" line="207"/>
        <source>(drawn, but cut: the answer ended first)</source>
        <translation>（已采样，但被截断：回答先结束了）</translation>
    </message>
</context>
<context>
    <name>PairsDialog</name>
    <message>
        <location filename="../../app/gui/pairs_dialog.py" line="32"/>
        <source>Recommended pairs</source>
        <translation>推荐的模型组合</translation>
    </message>
    <message>
        <location filename="../../app/gui/pairs_dialog.py" line="36"/>
        <source>These targets share the embedded SmolLM2-135M&apos;s tokenizer, so it drafts for them. Larger targets gain more: a draft step costs a smaller share of a target step. Whether drafting pays on this machine, and the draft length, are then measured and shown in the status bar.</source>
        <translation>这些目标模型与内置的 SmolLM2-135M 共用分词器，因此它可以为它们起草。目标模型越大收益越多：草稿步只占目标步的更小一部分。起草在本机是否划算以及草稿长度，之后都会实测并显示在状态栏中。</translation>
    </message>
    <message>
        <location filename="../../app/gui/pairs_dialog.py" line="42"/>
        <source>Target</source>
        <translation>目标模型</translation>
    </message>
    <message>
        <location filename="../../app/gui/pairs_dialog.py" line="42"/>
        <source>Parameters</source>
        <translation>参数量</translation>
    </message>
    <message>
        <location filename="../../app/gui/pairs_dialog.py" line="42"/>
        <source>Download</source>
        <translation>下载大小</translation>
    </message>
    <message>
        <location filename="../../app/gui/pairs_dialog.py" line="43"/>
        <source>Memory on {0}</source>
        <translation>{0} 上的内存</translation>
    </message>
    <message>
        <location filename="../../app/gui/pairs_dialog.py" line="43"/>
        <source>Status</source>
        <translation>状态</translation>
    </message>
    <message>
        <location filename="../../app/gui/pairs_dialog.py" line="48"/>
        <source>downloaded</source>
        <translation>已下载</translation>
    </message>
    <message>
        <location filename="../../app/gui/pairs_dialog.py" line="48"/>
        <source>not downloaded</source>
        <translation>未下载</translation>
    </message>
    <message>
        <location filename="../../app/gui/pairs_dialog.py" line="49"/>
        <source>offline: not in the local cache</source>
        <translation>离线：不在本地缓存中</translation>
    </message>
    <message>
        <location filename="../../app/gui/pairs_dialog.py" line="58"/>
        <source>Use</source>
        <translation>使用</translation>
    </message>
    <message>
        <location filename="../../app/gui/pairs_dialog.py" line="58"/>
        <source>Download and use</source>
        <translation>下载并使用</translation>
    </message>
    <message>
        <location filename="../../app/gui/pairs_dialog.py" line="59"/>
        <source>Offline</source>
        <translation>离线</translation>
    </message>
    <message>
        <location filename="../../app/gui/pairs_dialog.py" line="62"/>
        <source>The hub is off (HF_HUB_OFFLINE=1) and {0} is not in the local Hugging Face cache; download it once while online.</source>
        <translation>Hub 已关闭（HF_HUB_OFFLINE=1），且 {0} 不在本地 Hugging Face 缓存中；请在联网时下载一次。</translation>
    </message>
</context>
<context>
    <name>PlaybackBar</name>
    <message>
        <location filename="../../app/gui/playback_bar.py" line="20"/>
        <location filename="../../app/gui/playback_bar.py" line="69"/>
        <source>Pause</source>
        <translation>暂停</translation>
    </message>
    <message>
        <location filename="../../app/gui/playback_bar.py" line="20"/>
        <source>Space</source>
        <translation>空格</translation>
    </message>
    <message>
        <location filename="../../app/gui/playback_bar.py" line="21"/>
        <source>Step one round</source>
        <translation>前进一轮</translation>
    </message>
    <message>
        <location filename="../../app/gui/playback_bar.py" line="21"/>
        <source>Right arrow</source>
        <translation>右方向键</translation>
    </message>
    <message>
        <location filename="../../app/gui/playback_bar.py" line="22"/>
        <source>Playback speed</source>
        <translation>回放速度</translation>
    </message>
    <message>
        <location filename="../../app/gui/playback_bar.py" line="27"/>
        <source>Close replay</source>
        <translation>关闭回放</translation>
    </message>
    <message>
        <location filename="../../app/gui/playback_bar.py" line="63"/>
        <source>round %1 of %2</source>
        <translation>第 %1 轮，共 %2 轮</translation>
    </message>
    <message>
        <location filename="../../app/gui/playback_bar.py" line="69"/>
        <source>Play</source>
        <translation>播放</translation>
    </message>
</context>
<context>
    <name>PlotsPanel</name>
    <message>
        <location filename="../../app/gui/plots.py" line="87"/>
        <location filename="../../app/gui/plots.py" line="313"/>
        <source>Acceptance · speedup</source>
        <translation>接受 · 加速比</translation>
    </message>
    <message>
        <location filename="../../app/gui/plots.py" line="88"/>
        <location filename="../../app/gui/plots.py" line="313"/>
        <source>By position · tokens/s</source>
        <translation>按位置 · 词元/秒</translation>
    </message>
    <message>
        <location filename="../../app/gui/plots.py" line="96"/>
        <source>share of rounds</source>
        <translation>轮次占比</translation>
    </message>
    <message>
        <location filename="../../app/gui/plots.py" line="96"/>
        <source>drafts accepted per round</source>
        <translation>每轮接受的草稿数</translation>
    </message>
    <message>
        <location filename="../../app/gui/plots.py" line="97"/>
        <source>speedup ×</source>
        <translation>加速比 ×</translation>
    </message>
    <message>
        <location filename="../../app/gui/plots.py" line="97"/>
        <location filename="../../app/gui/plots.py" line="99"/>
        <source>tokens in this message</source>
        <translation>本条消息的词元数</translation>
    </message>
    <message>
        <location filename="../../app/gui/plots.py" line="98"/>
        <source>acceptance rate</source>
        <translation>接受率</translation>
    </message>
    <message>
        <location filename="../../app/gui/plots.py" line="98"/>
        <source>draft position</source>
        <translation>草稿位置</translation>
    </message>
    <message>
        <location filename="../../app/gui/plots.py" line="99"/>
        <source>tokens / s</source>
        <translation>词元 / 秒</translation>
    </message>
    <message>
        <location filename="../../app/gui/plots.py" line="132"/>
        <source>Blue: the speedup measured so far in this answer, against target-only steps timed on this machine. Dashed: &quot;this answer so far&quot;, Leviathan et al.&apos;s formula on this answer&apos;s acceptance and draft cost. The status bar&apos;s &quot;auto&apos;s plan&quot; is the same formula on the figures timed at load, before the answer.</source>
        <translation>实线：本回答到目前为止实测的加速比，相对于在本机上计时的仅目标模型步骤。点划线：“本回答到目前为止”，即 Leviathan 的加速比式子，用本回答的接受率和草稿开销。状态栏的“auto 的计划”用同一式子，数据为加载时计时的，在回答之前。</translation>
    </message>
    <message>
        <location filename="../../app/gui/plots.py" line="207"/>
        <source>Accepted drafts per round ({0} rounds)</source>
        <translation>每轮接受的草稿数（{0} 轮）</translation>
    </message>
    <message>
        <location filename="../../app/gui/plots.py" line="208"/>
        <location filename="../../app/gui/plots.py" line="243"/>
        <source>message</source>
        <translation>本条消息</translation>
    </message>
    <message>
        <location filename="../../app/gui/plots.py" line="208"/>
        <source>bonus</source>
        <translation>奖励</translation>
    </message>
    <message>
        <location filename="../../app/gui/plots.py" line="208"/>
        <location filename="../../app/gui/plots.py" line="243"/>
        <source>session</source>
        <translation>本次会话</translation>
    </message>
    <message>
        <location filename="../../app/gui/plots.py" line="222"/>
        <source>Measured slower than target-only so far ({0:.2f}×) on this machine.</source>
        <translation>到目前为止在本机实测比仅目标模型更慢（{0:.2f}×）。</translation>
    </message>
    <message>
        <location filename="../../app/gui/plots.py" line="225"/>
        <source>No draft proposed in this answer: the drafter proposes only where it predicts a gain on this machine, and none did.</source>
        <translation>本次回答没有提出草稿：草稿器只在预计能在本机提速时提出，这次没有。</translation>
    </message>
    <message>
        <location filename="../../app/gui/plots.py" line="232"/>
        <source>Speedup vs target-only</source>
        <translation>相对仅目标模型的加速比</translation>
    </message>
    <message>
        <location filename="../../app/gui/plots.py" line="233"/>
        <source>measured</source>
        <translation>实测</translation>
    </message>
    <message>
        <location filename="../../app/gui/plots.py" line="234"/>
        <source>this answer so far</source>
        <translation>本回答到目前为止</translation>
    </message>
    <message>
        <location filename="../../app/gui/plots.py" line="242"/>
        <source>Acceptance by position</source>
        <translation>各位置的接受率</translation>
    </message>
    <message>
        <location filename="../../app/gui/plots.py" line="255"/>
        <source>Tokens per second</source>
        <translation>每秒词元数</translation>
    </message>
    <message>
        <location filename="../../app/gui/plots.py" line="256"/>
        <source>speculative</source>
        <translation>推测解码</translation>
    </message>
    <message>
        <location filename="../../app/gui/plots.py" line="257"/>
        <source>target only</source>
        <translation>仅目标模型</translation>
    </message>
</context>
<context>
    <name>Policy</name>
    <message>
        <location filename="../../app/gui/model_flow.py" line="224"/>
        <source>draft costs {0:.2f} target steps on this {1}</source>
        <translation>在这台 {1} 上，草稿模型的开销为 {0:.2f} 个目标步</translation>
    </message>
    <message>
        <location filename="../../app/gui/model_flow.py" line="227"/>
        <source>it proposes in only {0:.0%} of rounds here</source>
        <translation>在这里它只在 {0:.0%} 的轮次中提出草稿</translation>
    </message>
    <message>
        <location filename="../../app/gui/model_flow.py" line="229"/>
        <source>a tree does not pay here: its best, {0} nodes, accepts {1:.2f} tokens a round for a verify cost of {2:.2f} target steps</source>
        <translation>词元树在这里不划算：最好的 {0} 个节点的树每轮接受 {1:.2f} 个词元，而验证要花 {2:.2f} 个目标步</translation>
    </message>
    <message>
        <location filename="../../app/gui/model_flow.py" line="232"/>
        <source>acceptance α {0:.2f} is too low for a verify cost of {1:.2f} target steps</source>
        <translation>接受率 α {0:.2f} 太低，抵不过 {1:.2f} 个目标步的验证开销</translation>
    </message>
    <message>
        <location filename="../../app/gui/model_flow.py" line="239"/>
        <source>target-only: no drafter available</source>
        <translation>仅目标模型：没有可用的草稿</translation>
    </message>
    <message>
        <location filename="../../app/gui/model_flow.py" line="241"/>
        <source>target-only: no draft is predicted to be faster on this {0} ({1})</source>
        <translation>仅目标模型：在这台 {0} 上没有草稿预计更快（{1}）</translation>
    </message>
    <message>
        <location filename="../../app/gui/model_flow.py" line="245"/>
        <source>{0}, tree of {1} nodes: predicted {2:.2f}× target-only</source>
        <translation>{0}，{1} 个节点的树：预测为仅目标模型的 {2:.2f}×</translation>
    </message>
    <message>
        <location filename="../../app/gui/model_flow.py" line="247"/>
        <source>{0}, γ {1}: predicted {2:.2f}× target-only</source>
        <translation>{0}，γ {1}：预计为仅目标模型的 {2:.2f}×</translation>
    </message>
</context>
<context>
    <name>PositionPanel</name>
    <message>
        <location filename="../../app/gui/step_panels.py" line="124"/>
        <source>not tested (an earlier draft was rejected)</source>
        <translation>未检验（更早的草稿已被拒绝）</translation>
    </message>
    <message>
        <location filename="../../app/gui/step_panels.py" line="126"/>
        <source>accepted</source>
        <translation>接受</translation>
    </message>
    <message>
        <location filename="../../app/gui/step_panels.py" line="128"/>
        <source>rejected</source>
        <translation>拒绝</translation>
    </message>
    <message>
        <location filename="../../app/gui/step_panels.py" line="130"/>
        <source>&lt;b&gt;Position {0}&lt;/b&gt; · x = &lt;code&gt;{1}&lt;/code&gt; · &lt;span style=&apos;color:{2}&apos;&gt;&lt;b&gt;{3}&lt;/b&gt;&lt;/span&gt;</source>
        <translation>&lt;b&gt;第 {0} 个位置&lt;/b&gt; · x = &lt;code&gt;{1}&lt;/code&gt; · &lt;span style=&apos;color:{2}&apos;&gt;&lt;b&gt;{3}&lt;/b&gt;&lt;/span&gt;</translation>
    </message>
    <message>
        <location filename="../../app/gui/step_panels.py" line="134"/>
        <source>&lt;span style=&apos;color:{0}&apos;&gt;■ p(x) = {1:.4f}&lt;/span&gt; &amp;nbsp; &lt;span style=&apos;color:{2}&apos;&gt;■ q(x) = {3:.4f}&lt;/span&gt;</source>
        <translation>&lt;span style=&apos;color:{0}&apos;&gt;■ p(x) = {1:.4f}&lt;/span&gt; &amp;nbsp; &lt;span style=&apos;color:{2}&apos;&gt;■ q(x) = {3:.4f}&lt;/span&gt;</translation>
    </message>
    <message>
        <location filename="../../app/gui/step_panels.py" line="136"/>
        <source>p(x)/q(x) = {0:.4f} &amp;nbsp; min(1, p/q) = &lt;b&gt;{1:.4f}&lt;/b&gt;</source>
        <translation>p(x)/q(x) = {0:.4f} &amp;nbsp; min(1, p/q) = &lt;b&gt;{1:.4f}&lt;/b&gt;</translation>
    </message>
    <message>
        <location filename="../../app/gui/step_panels.py" line="141"/>
        <source>u = &lt;b&gt;{0:.4f}&lt;/b&gt; {1} {2:.4f} → {3}</source>
        <translation>均匀随机数 u = &lt;b&gt;{0:.4f}&lt;/b&gt; {1} {2:.4f} → {3}</translation>
    </message>
</context>
<context>
    <name>Presentation</name>
    <message>
        <location filename="../../app/gui/presentation.py" line="25"/>
        <source>tokens / round</source>
        <translation>词元 / 轮</translation>
    </message>
    <message>
        <location filename="../../app/gui/presentation.py" line="26"/>
        <source>tokens / round · tree of {0:.0f} nodes</source>
        <translation>词元 / 轮 · {0:.0f} 个节点的树</translation>
    </message>
    <message>
        <location filename="../../app/gui/presentation.py" line="40"/>
        <source>measured speedup</source>
        <translation>实测加速比</translation>
    </message>
    <message>
        <location filename="../../app/gui/presentation.py" line="40"/>
        <source>tokens / s</source>
        <translation>词元 / 秒</translation>
    </message>
    <message>
        <location filename="../../app/gui/presentation.py" line="40"/>
        <source>acceptance α</source>
        <translation>接受率 α</translation>
    </message>
</context>
<context>
    <name>QueuedQuestion</name>
    <message>
        <location filename="../../app/gui/queued_question.py" line="37"/>
        <source>“{0}” will be sent when the model is ready · Stop cancels</source>
        <translation>“{0}”将在模型就绪后发送 · 停止可取消</translation>
    </message>
    <message>
        <location filename="../../app/gui/queued_question.py" line="56"/>
        <source>Not sent: the models did not load. Your question is back in the box.</source>
        <translation>未发送：模型加载失败。你的问题已放回输入栏。</translation>
    </message>
</context>
<context>
    <name>Race</name>
    <message>
        <location filename="../../app/gui/race_flow.py" line="118"/>
        <source>Type a prompt to race first</source>
        <translation>请先输入一个提示再比赛</translation>
    </message>
    <message>
        <location filename="../../app/gui/race_flow.py" line="129"/>
        <source>The {0} draft has no token-tree form to race</source>
        <translation>草稿 {0} 没有可用于比赛的词元树形式</translation>
    </message>
    <message>
        <location filename="../../app/gui/race_flow.py" line="135"/>
        <source>Racing: two runs, one after the other …</source>
        <translation>比赛中：两次运行，依次进行…</translation>
    </message>
    <message>
        <location filename="../../app/gui/race_flow.py" line="144"/>
        <source>Race measured · replaying side by side</source>
        <translation>比赛已测量 · 并排回放</translation>
    </message>
    <message>
        <location filename="../../app/gui/race_flow.py" line="149"/>
        <source>The race failed: {0}</source>
        <translation>比赛失败：{0}</translation>
    </message>
    <message>
        <location filename="../../app/gui/race_flow.py" line="178"/>
        <source>Save race</source>
        <translation>保存比赛</translation>
    </message>
    <message>
        <location filename="../../app/gui/race_flow.py" line="179"/>
        <source>SpecLens recordings (*{0})</source>
        <translation>SpecLens 录制 (*{0})</translation>
    </message>
    <message>
        <location filename="../../app/gui/race_view.py" line="41"/>
        <source>speculative, draft: {0}</source>
        <translation>推测解码，草稿：{0}</translation>
    </message>
    <message>
        <location filename="../../app/gui/race_view.py" line="38"/>
        <source>target only</source>
        <translation>仅目标模型</translation>
    </message>
    <message>
        <location filename="../../app/gui/race_view.py" line="40"/>
        <source>token tree, draft: {0}</source>
        <translation>词元树，草稿：{0}</translation>
    </message>
    <message>
        <location filename="../../app/gui/race_view.py" line="48"/>
        <source>– tokens / round</source>
        <translation>– 词元 / 轮</translation>
    </message>
    <message>
        <location filename="../../app/gui/race_view.py" line="49"/>
        <source>{0:.2f} tokens / round · {1:.1f} verified / round</source>
        <translation>每轮 {0:.2f} 个词元 · 每轮验证 {1:.1f} 个</translation>
    </message>
    <message>
        <location filename="../../app/gui/race_view.py" line="102"/>
        <source>{0:.1f} tok/s</source>
        <translation>{0:.1f} 词元/秒</translation>
    </message>
    <message>
        <location filename="../../app/gui/race_view.py" line="125"/>
        <source>Replay race</source>
        <translation>回放比赛</translation>
    </message>
    <message>
        <location filename="../../app/gui/race_view.py" line="126"/>
        <source>Playback speed</source>
        <translation>回放速度</translation>
    </message>
    <message>
        <location filename="../../app/gui/race_view.py" line="130"/>
        <source>Save race…</source>
        <translation>保存比赛…</translation>
    </message>
    <message>
        <location filename="../../app/gui/race_view.py" line="131"/>
        <source>Close race</source>
        <translation>关闭比赛</translation>
    </message>
    <message>
        <location filename="../../app/gui/race_view.py" line="171"/>
        <source>A side-by-side replay of two measured runs: both decoded the same prompt on {0}, one after the other, and each plays back at its own measured pace.</source>
        <translation>两次实测运行的并排回放：二者在{0}上依次解码同一个提示，并各自按实测速度回放。</translation>
    </message>
    <message>
        <location filename="../../app/gui/race_view.py" line="174"/>
        <source>this machine</source>
        <translation>本机</translation>
    </message>
    <message>
        <location filename="../../app/gui/race_view.py" line="214"/>
        <source>Speedup {0:.2f}× (right against left, tokens/s)</source>
        <translation>加速比 {0:.2f}×（右对左，词元/秒）</translation>
    </message>
    <message>
        <location filename="../../app/gui/race_view.py" line="216"/>
        <source>The recording ends before both runs finished</source>
        <translation>录制在两次运行都结束之前就结束了</translation>
    </message>
</context>
<context>
    <name>Recordings</name>
    <message>
        <location filename="../../app/gui/answer_recorder.py" line="43"/>
        <source>speculative</source>
        <translation>推测解码</translation>
    </message>
    <message>
        <location filename="../../app/gui/answer_recorder.py" line="44"/>
        <source>target only</source>
        <translation>仅目标模型</translation>
    </message>
    <message>
        <location filename="../../app/gui/answer_recorder.py" line="81"/>
        <source>The recording was not saved: {0}</source>
        <translation>录制未保存：{0}</translation>
    </message>
    <message>
        <location filename="../../app/gui/recording_flow.py" line="41"/>
        <source>No answer to save yet</source>
        <translation>还没有可保存的回答</translation>
    </message>
    <message>
        <location filename="../../app/gui/recording_flow.py" line="43"/>
        <source>Save recording</source>
        <translation>保存录制</translation>
    </message>
    <message>
        <location filename="../../app/gui/recording_flow.py" line="44"/>
        <location filename="../../app/gui/recording_flow.py" line="59"/>
        <source>SpecLens recordings (*{0})</source>
        <translation>SpecLens 录制 (*{0})</translation>
    </message>
    <message>
        <location filename="../../app/gui/recording_flow.py" line="54"/>
        <source>Recording saved to {0}</source>
        <translation>录制已保存到 {0}</translation>
    </message>
    <message>
        <location filename="../../app/gui/recording_flow.py" line="58"/>
        <source>Open recording</source>
        <translation>打开录制</translation>
    </message>
    <message>
        <location filename="../../app/gui/recording_flow.py" line="104"/>
        <source>none (target only)</source>
        <translation>无（仅目标模型）</translation>
    </message>
    <message>
        <location filename="../../app/gui/recording_flow.py" line="111"/>
        <source>Replay: {0}</source>
        <translation>回放：{0}</translation>
    </message>
    <message>
        <location filename="../../app/gui/recording_flow.py" line="116"/>
        <source>Replaying a recording</source>
        <translation>正在回放录制</translation>
    </message>
    <message>
        <location filename="../../app/gui/recording_flow.py" line="127"/>
        <source>Done · the recording ends here</source>
        <translation>完成 · 录制到此结束</translation>
    </message>
</context>
<context>
    <name>ServeFlow</name>
    <message>
        <location filename="../../app/gui/serve_flow.py" line="61"/>
        <source>Load a model pair and wait for the answer to end first</source>
        <translation>请先加载模型对，并等待当前回答结束</translation>
    </message>
    <message>
        <location filename="../../app/gui/serve_flow.py" line="79"/>
        <source>The local server could not start: no free port on 127.0.0.1</source>
        <translation>本机 API 无法启动：127.0.0.1 上没有可用的 TCP port</translation>
    </message>
    <message>
        <location filename="../../app/gui/serve_flow.py" line="83"/>
        <source>Serving {0} at {1}/v1 (OpenAI-compatible): answers requested there appear here. Models ▸ Serve on localhost stops it.</source>
        <translation>正在 {1}/v1 开放 {0}（OpenAI API）：经它发来的问题的回答会显示在这里。再次选择“模型 → 在本机开放 API”即可停止。</translation>
    </message>
    <message>
        <location filename="../../app/gui/serve_flow.py" line="101"/>
        <source>Serving stopped</source>
        <translation>本机 API 已停止</translation>
    </message>
    <message>
        <location filename="../../app/gui/serve_flow.py" line="105"/>
        <source>Serving at {0}/v1 · waiting for requests</source>
        <translation>本机 API {0}/v1 · 等待问题</translation>
    </message>
    <message>
        <location filename="../../app/gui/serve_flow.py" line="139"/>
        <source>Could not save the request: {0}</source>
        <translation>无法保存问题：{0}</translation>
    </message>
    <message>
        <location filename="../../app/gui/serve_flow.py" line="148"/>
        <source>Answering a request from the local server …</source>
        <translation>正在回答本机 API 收到的问题…</translation>
    </message>
</context>
<context>
    <name>SpeculationOffer</name>
    <message>
        <location filename="../../app/gui/speculation_offer.py" line="31"/>
        <location filename="../../app/gui/speculation_offer.py" line="59"/>
        <source>Show speculation anyway</source>
        <translation>仍然显示推测解码</translation>
    </message>
    <message>
        <location filename="../../app/gui/speculation_offer.py" line="56"/>
        <source>Show speculation anyway ({0}, {1:.2f}× on this machine)</source>
        <translation>仍然显示推测解码（{0}，本机 {1:.2f}×）</translation>
    </message>
    <message>
        <location filename="../../app/gui/speculation_offer.py" line="72"/>
        <source>Speculating anyway with {0}: it ran at {1:.2f}× target-only on this machine.</source>
        <translation>仍用 {0} 推测解码：它在本机的速度是仅目标模型的 {1:.2f}×。</translation>
    </message>
    <message>
        <location filename="../../app/gui/speculation_offer.py" line="78"/>
        <source>Speculating with {0} anyway: {1:.2f}× on this machine</source>
        <translation>仍用 {0} 推测解码：本机 {1:.2f}×</translation>
    </message>
    <message>
        <location filename="../../app/gui/speculation_offer.py" line="87"/>
        <source>Replay: speculating with {0}</source>
        <translation>回放：用 {0} 推测解码</translation>
    </message>
    <message>
        <location filename="../../app/gui/speculation_offer.py" line="88"/>
        <source>Replay: target only</source>
        <translation>回放：仅目标模型</translation>
    </message>
    <message>
        <location filename="../../app/gui/speculation_offer.py" line="91"/>
        <source>Target only: speculation is slower on this machine</source>
        <translation>仅目标模型：本机上推测解码更慢</translation>
    </message>
    <message>
        <location filename="../../app/gui/speculation_offer.py" line="92"/>
        <source>Target only</source>
        <translation>仅目标模型</translation>
    </message>
    <message>
        <location filename="../../app/gui/speculation_offer.py" line="95"/>
        <source>Speculating with {0}</source>
        <translation>用 {0} 推测解码</translation>
    </message>
    <message>
        <location filename="../../app/gui/speculation_offer.py" line="96"/>
        <source>Speculating with {0}, {1:.2f}× on this machine</source>
        <translation>用 {0} 推测解码，本机 {1:.2f}×</translation>
    </message>
</context>
<context>
    <name>Status</name>
    <message>
        <location filename="../../app/gui/token_format.py" line="58"/>
        <source>accepted</source>
        <translation>接受</translation>
    </message>
    <message>
        <location filename="../../app/gui/token_format.py" line="59"/>
        <source>corrected</source>
        <translation>修正</translation>
    </message>
    <message>
        <location filename="../../app/gui/token_format.py" line="60"/>
        <source>bonus</source>
        <translation>奖励</translation>
    </message>
    <message>
        <location filename="../../app/gui/token_format.py" line="61"/>
        <source>target</source>
        <translation>目标</translation>
    </message>
    <message>
        <location filename="../../app/gui/token_format.py" line="62"/>
        <source>rejected</source>
        <translation>拒绝</translation>
    </message>
    <message>
        <location filename="../../app/gui/token_format.py" line="68"/>
        <source>draft token kept by the min(1, p/q) test</source>
        <translation>通过 min(1, p/q) 检验而保留的草稿词元</translation>
    </message>
    <message>
        <location filename="../../app/gui/token_format.py" line="69"/>
        <source>sampled from the residual max(0, p - q) after a rejection</source>
        <translation>拒绝后从残差分布 max(0, p - q) 采样</translation>
    </message>
    <message>
        <location filename="../../app/gui/token_format.py" line="70"/>
        <source>sampled from p after every draft token was accepted</source>
        <translation>所有草稿词元都被接受后从 p 采样</translation>
    </message>
    <message>
        <location filename="../../app/gui/token_format.py" line="71"/>
        <source>sampled from p with no draft (target-only decoding)</source>
        <translation>无草稿时从 p 采样（仅目标模型解码）</translation>
    </message>
    <message>
        <location filename="../../app/gui/token_format.py" line="72"/>
        <source>draft token refused; not part of the answer</source>
        <translation>被拒绝的草稿词元；不属于回答</translation>
    </message>
</context>
<context>
    <name>StepThrough</name>
    <message>
        <location filename="../../app/gui/step_view.py" line="42"/>
        <location filename="../../app/gui/step_view.py" line="159"/>
        <source>Pause</source>
        <translation>暂停</translation>
    </message>
    <message>
        <location filename="../../app/gui/step_view.py" line="43"/>
        <source>Hold the generation between rounds (Space)</source>
        <translation>在两轮之间暂停生成（空格）</translation>
    </message>
    <message>
        <location filename="../../app/gui/step_view.py" line="44"/>
        <source>◀ Previous</source>
        <translation>◀ 上一轮</translation>
    </message>
    <message>
        <location filename="../../app/gui/step_view.py" line="44"/>
        <source>Previous round (←)</source>
        <translation>上一轮（←）</translation>
    </message>
    <message>
        <location filename="../../app/gui/step_view.py" line="45"/>
        <source>Next ▶</source>
        <translation>下一轮 ▶</translation>
    </message>
    <message>
        <location filename="../../app/gui/step_view.py" line="45"/>
        <source>Next round (→); when paused at the newest round, runs one more</source>
        <translation>下一轮（→）；在最新一轮暂停时，再运行一轮</translation>
    </message>
    <message>
        <location filename="../../app/gui/step_view.py" line="47"/>
        <source>Latest</source>
        <translation>最新</translation>
    </message>
    <message>
        <location filename="../../app/gui/step_view.py" line="47"/>
        <source>Jump to the newest round and follow</source>
        <translation>跳到最新一轮并跟随</translation>
    </message>
    <message>
        <location filename="../../app/gui/step_view.py" line="159"/>
        <source>Resume</source>
        <translation>继续</translation>
    </message>
    <message>
        <location filename="../../app/gui/step_view.py" line="230"/>
        <source>No rounds yet: send a message (or replay a recording), then pause and step with ← and →.</source>
        <translation>还没有轮次：发送一条消息（或回放一段录制），然后暂停并用 ← 和 → 逐轮查看。</translation>
    </message>
    <message>
        <location filename="../../app/gui/step_view.py" line="236"/>
        <source>Round {0} of {1}: this round was stored without its acceptance test (reopened from history).</source>
        <translation>第 {0} 轮，共 {1} 轮：这一轮保存时没有包含接受检验（从历史记录重新打开）。</translation>
    </message>
    <message>
        <location filename="../../app/gui/step_view.py" line="295"/>
        <source>paused</source>
        <translation>已暂停</translation>
    </message>
    <message>
        <location filename="../../app/gui/step_view.py" line="296"/>
        <source>live</source>
        <translation>实时</translation>
    </message>
    <message>
        <location filename="../../app/gui/step_view.py" line="296"/>
        <source>stepping</source>
        <translation>逐轮查看中</translation>
    </message>
    <message>
        <location filename="../../app/gui/step_view.py" line="298"/>
        <source>{0} of {1} accepted, rejected at position {2}, then a corrected token</source>
        <translation>{1} 个中接受 {0} 个，在第 {2} 个位置被拒绝，随后是一个修正词元</translation>
    </message>
    <message>
        <location filename="../../app/gui/step_view.py" line="301"/>
        <source>all {0} accepted, then a bonus token</source>
        <translation>全部 {0} 个被接受，随后是一个奖励词元</translation>
    </message>
    <message>
        <location filename="../../app/gui/step_view.py" line="303"/>
        <source>no draft this round</source>
        <translation>本轮没有草稿</translation>
    </message>
    <message>
        <location filename="../../app/gui/step_view.py" line="305"/>
        <source>&lt;b&gt;Round {0} of {1}&lt;/b&gt; · γ = {2} · {3} · emitted {4} · &lt;i&gt;{5}&lt;/i&gt;</source>
        <translation>&lt;b&gt;第 {0} 轮，共 {1} 轮&lt;/b&gt; · γ = {2} · {3} · 输出 {4} 个 · &lt;i&gt;{5}&lt;/i&gt;</translation>
    </message>
    <message>
        <location filename="../../app/gui/step_view.py" line="320"/>
        <source>Drafted: {0}</source>
        <translation>草稿：{0}</translation>
    </message>
</context>
<context>
    <name>TokenDetails</name>
    <message>
        <location filename="../../app/gui/token_details.py" line="20"/>
        <source>Hover or click a token to inspect it.</source>
        <translation>将鼠标悬停或点击某个词元以查看详情。</translation>
    </message>
    <message>
        <location filename="../../app/gui/token_format.py" line="92"/>
        <source>token id {0} · round {1}</source>
        <translation>词元 id {0} · 第 {1} 轮</translation>
    </message>
    <message>
        <location filename="../../app/gui/token_format.py" line="97"/>
        <source>from the token tree: branch of node {0}</source>
        <translation>来自词元树：节点 {0} 的分支</translation>
    </message>
    <message>
        <location filename="../../app/gui/token_format.py" line="100"/>
        <source>residual</source>
        <translation>残差</translation>
    </message>
    <message>
        <location filename="../../app/gui/token_format.py" line="103"/>
        <source>&lt;b&gt;top {0}:&lt;/b&gt; {1}</source>
        <translation>&lt;b&gt;{0} 的最大项：&lt;/b&gt;{1}</translation>
    </message>
</context>
<context>
    <name>TreeLab</name>
    <message>
        <location filename="../../app/gui/lab_tree.py" line="31"/>
        <source>Target p and draft q at one node</source>
        <translation>一个节点上的目标 p 与草稿 q</translation>
    </message>
    <message>
        <location filename="../../app/gui/lab_tree.py" line="39"/>
        <source>Candidates, tested in this order</source>
        <translation>候选（按此顺序检验）</translation>
    </message>
    <message>
        <location filename="../../app/gui/lab_tree.py" line="41"/>
        <source>Top 3 of q</source>
        <translation>取 q 的前 3 名</translation>
    </message>
    <message>
        <location filename="../../app/gui/lab_tree.py" line="31"/>
        <source>Example</source>
        <translation>示例</translation>
    </message>
    <message>
        <location filename="../../app/gui/lab_tree.py" line="32"/>
        <source>&lt;b&gt;p, q and the final p′&lt;/b&gt; &amp;nbsp; &lt;span style=&apos;color:{0}&apos;&gt;■&lt;/span&gt; p &amp;nbsp;&lt;span style=&apos;color:{1}&apos;&gt;■&lt;/span&gt; q &amp;nbsp;&lt;span style=&apos;color:{2}&apos;&gt;■&lt;/span&gt; p′: p with the candidates zeroed, renormalised &amp;nbsp; #1–#3: the candidates</source>
        <translation>&lt;b&gt;p、q 与最终的 p′&lt;/b&gt; &amp;nbsp; &lt;span style=&apos;color:{0}&apos;&gt;■&lt;/span&gt; p &amp;nbsp;&lt;span style=&apos;color:{1}&apos;&gt;■&lt;/span&gt; q &amp;nbsp;&lt;span style=&apos;color:{2}&apos;&gt;■&lt;/span&gt; p′：候选置零后重新归一化的 p &amp;nbsp; #1–#3：候选</translation>
    </message>
    <message>
        <location filename="../../app/gui/lab_tree.py" line="35"/>
        <source>First token after simulated tree rounds (95% band)</source>
        <translation>模拟树轮次的首个输出词元（95% 区间）</translation>
    </message>
    <message>
        <location filename="../../app/gui/lab_tree.py" line="151"/>
        <source>&lt;b&gt;tree&lt;/b&gt;: p(S) = Σ p over the candidates S = {0} = &lt;b&gt;{1:.3f}&lt;/b&gt; &amp;nbsp; (simulated {2})</source>
        <translation>&lt;b&gt;树&lt;/b&gt;：p(S) = 候选集 S = {0} 上的 Σ p = &lt;b&gt;{1:.3f}&lt;/b&gt; &amp;nbsp;（模拟 {2}）</translation>
    </message>
    <message>
        <location filename="../../app/gui/lab_tree.py" line="153"/>
        <source>&lt;b&gt;chain&lt;/b&gt;, one token sampled from q: Σ min(p, q) = &lt;b&gt;{0:.3f}&lt;/b&gt; &amp;nbsp; (simulated {1})</source>
        <translation>&lt;b&gt;链&lt;/b&gt;（一个从 q 采样的词元）：Σ min(p, q) = &lt;b&gt;{0:.3f}&lt;/b&gt; &amp;nbsp;（模拟 {1}）</translation>
    </message>
    <message>
        <location filename="../../app/gui/lab_tree.py" line="158"/>
        <source>#{0} {1}: reached {2:.3f}, accepted when u &amp;lt; p′ = {3:.3f}, so P = p({1}) = &lt;b&gt;{4:.3f}&lt;/b&gt; &amp;nbsp; (simulated {5})</source>
        <translation>#{0} {1}：到达概率 {2:.3f}，u &amp;lt; p′ = {3:.3f} 时接受，故 P = p({1}) = &lt;b&gt;{4:.3f}&lt;/b&gt; &amp;nbsp;（模拟 {5}）</translation>
    </message>
    <message>
        <location filename="../../app/gui/lab_tree.py" line="162"/>
        <source>all rejected ({0:.3f}): the token is drawn from p′ = {1}</source>
        <translation>全部被拒（{0:.3f}）：词元从 p′ = {1} 中抽取</translation>
    </message>
    <message>
        <location filename="../../app/gui/lab_tree.py" line="163"/>
        <source>&lt;b&gt;E[tokens per round]&lt;/b&gt;: tree 1 + p(S) = &lt;b&gt;{0:.3f}&lt;/b&gt;, chain 1 + Σ min(p, q) = &lt;b&gt;{1:.3f}&lt;/b&gt;</source>
        <translation>&lt;b&gt;E[每轮词元数]&lt;/b&gt;：树 1 + p(S) = &lt;b&gt;{0:.3f}&lt;/b&gt;，链 1 + Σ min(p, q) = &lt;b&gt;{1:.3f}&lt;/b&gt;</translation>
    </message>
    <message>
        <location filename="../../app/gui/lab_tree.py" line="165"/>
        <source>Simulated rounds: &lt;b&gt;{0}&lt;/b&gt;</source>
        <translation>已模拟轮数：&lt;b&gt;{0}&lt;/b&gt;</translation>
    </message>
    <message>
        <location filename="../../app/gui/lab_tree.py" line="169"/>
        <source>&lt;span style=&apos;color:{0}&apos;&gt;■&lt;/span&gt; first token of each round, decided by the engine&apos;s own tree rule &amp;nbsp; — p (the target) &amp;nbsp; I 95% band · the tree wins when its candidates hold more of p than q shares with p; a draft close to p, sampled, wins as a chain</source>
        <translation>&lt;span style=&apos;color:{0}&apos;&gt;■&lt;/span&gt; 每轮的首个词元，由引擎自身的树规则判定 &amp;nbsp; — p（目标） &amp;nbsp; I 95% 区间 · 候选覆盖的 p 质量多于 q 与 p 的重叠时，树胜出；草稿接近 p 时，按 q 采样的链胜出</translation>
    </message>
</context>
<context>
    <name>TreePanel</name>
    <message>
        <location filename="../../app/gui/tree_panel.py" line="74"/>
        <source>&lt;b&gt;Token tree&lt;/b&gt;: {0} nodes verified in one pass, {1} accepted along the path</source>
        <translation>&lt;b&gt;词元树&lt;/b&gt;：一次前向验证 {0} 个节点，沿路径接受 {1} 个</translation>
    </message>
    <message>
        <location filename="../../app/gui/tree_panel.py" line="76"/>
        <source>u {0:.3f} ≥ p′ {1:.3f}, residual {2:.3f}</source>
        <translation>u {0:.3f} ≥ p′ {1:.3f}，剩余质量 {2:.3f}</translation>
    </message>
    <message>
        <location filename="../../app/gui/tree_panel.py" line="77"/>
        <source>u {0:.3f} &lt; p′ {1:.3f}</source>
        <translation>u {0:.3f} &lt; p′ {1:.3f}</translation>
    </message>
    <message>
        <location filename="../../app/gui/tree_panel.py" line="77"/>
        <source>not tested</source>
        <translation>未检验</translation>
    </message>
    <message>
        <location filename="../../app/gui/tree_panel.py" line="78"/>
        <source>corrected</source>
        <translation>修正</translation>
    </message>
    <message>
        <location filename="../../app/gui/tree_panel.py" line="78"/>
        <source>bonus</source>
        <translation>奖励</translation>
    </message>
</context>
<context>
    <name>WindowStatus</name>
    <message>
        <location filename="../../app/gui/status.py" line="78"/>
        <source> · threads: {0}</source>
        <translation> · 线程：{0}</translation>
    </message>
    <message>
        <location filename="../../app/gui/status.py" line="82"/>
        <source>CPU threads chosen by timing one decode step at load: {0}</source>
        <translation>CPU 线程数在加载时按一次解码步骤的计时选定：{0}</translation>
    </message>
    <message>
        <location filename="../../app/gui/status.py" line="83"/>
        <source>CPU threads as set (OMP_NUM_THREADS, --threads or one core)</source>
        <translation>CPU 线程数按设定（OMP_NUM_THREADS、--threads 或单核）</translation>
    </message>
</context>
</TS>
